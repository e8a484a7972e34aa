/// One pending local operation on a key: the last one per key wins.
enum PendingOperation: Sendable, Equatable {
    case set(PlistValue)
    case remove

    var value: PlistValue? {
        if case .set(let value) = self { return value }
        return nil
    }
}

extension Dictionary where Key == String, Value == PlistValue {
    /// Applies operations key by key: the per-key merge that keeps other writers' keys.
    mutating func apply(_ operations: [String: PendingOperation]) {
        for (key, operation) in operations {
            switch operation {
            case .set(let value): self[key] = value
            case .remove: removeValue(forKey: key)
            }
        }
    }

    func applying(_ operations: [String: PendingOperation]) -> Self {
        if operations.isEmpty { return self }
        var copy = self
        copy.apply(operations)
        return copy
    }
}

enum Diff {
    /// The keys whose value differs between two snapshots, with old and new values.
    static func changes(
        from old: [String: PlistValue], to new: [String: PlistValue]
    ) -> [(key: String, old: PlistValue?, new: PlistValue?)] {
        var result: [(key: String, old: PlistValue?, new: PlistValue?)] = []
        for (key, oldValue) in old {
            let newValue = new[key]
            if newValue != oldValue { result.append((key, oldValue, newValue)) }
        }
        for (key, newValue) in new where old[key] == nil {
            result.append((key, nil, newValue))
        }
        return result
    }
}

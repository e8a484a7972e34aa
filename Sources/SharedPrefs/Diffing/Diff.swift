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
        var kept = 0
        for (key, newValue) in new {
            let oldValue = old[key]
            if oldValue != nil { kept += 1 }
            if oldValue != newValue { result.append((key, oldValue, newValue)) }
        }
        // Only when some old key was not found in `new` can anything have been removed.
        if kept < old.count {
            for (key, oldValue) in old where new[key] == nil { result.append((key, oldValue, nil)) }
        }
        return result
    }
}

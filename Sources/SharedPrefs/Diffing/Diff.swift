/// One pending local operation on a key: the last one per key wins.
enum PendingOperation: Sendable, Equatable {
    case set(PlistValue)
    case remove

    var value: PlistValue? {
        if case .set(let value) = self { return value }
        return nil
    }
}

/// Pending operations by exact key.
typealias Operations = [PlistKey: PendingOperation]

extension PlistDictionary {
    /// Applies operations key by key: the per-key merge that keeps other writers' keys.
    mutating func apply(_ operations: Operations) {
        for (key, operation) in operations {
            switch operation {
            case .set(let value): storage[key] = value
            case .remove: storage.removeValue(forKey: key)
            }
        }
    }

    func applying(_ operations: Operations) -> Self {
        if operations.isEmpty { return self }
        var copy = self
        copy.apply(operations)
        return copy
    }
}

enum Diff {
    /// The keys whose value differs between two snapshots, with old and new values.
    static func changes(
        from old: PlistDictionary, to new: PlistDictionary
    ) -> [(key: String, old: PlistValue?, new: PlistValue?)] {
        var result: [(key: String, old: PlistValue?, new: PlistValue?)] = []
        var kept = 0
        for (key, newValue) in new.storage {
            let oldValue = old.storage[key]
            if oldValue != nil { kept += 1 }
            if oldValue != newValue { result.append((key.string, oldValue, newValue)) }
        }
        // Only when some old key was not found in `new` can anything have been removed.
        if kept < old.count {
            for (key, oldValue) in old.storage where new.storage[key] == nil { result.append((key.string, oldValue, nil)) }
        }
        return result
    }
}

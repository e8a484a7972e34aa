/// One pending local operation on a key: the last one per key wins.
package enum PendingOperation: Sendable, Equatable {
    case set(PlistValue)
    case remove

    package var value: PlistValue? {
        if case .set(let value) = self { return value }
        return nil
    }
}

/// Pending operations by exact key.
package typealias Operations = [PlistKey: PendingOperation]

extension PlistDictionary {
    /// Applies operations key by key: the per-key merge that keeps other writers' keys.
    package mutating func apply(_ operations: Operations) {
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

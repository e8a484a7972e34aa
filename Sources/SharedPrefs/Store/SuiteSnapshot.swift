/// What a store holds of its suite's values: the binary file's image, decoded when read
/// (``SuiteImage/value(of:)``), and the keys whose value differs from it. Without an image (XML,
/// etcd, memory) every key is among those. A suite costs its file's bytes and an index.
struct SuiteSnapshot: Sendable {
    private(set) var image: SuiteImage?
    /// The keys whose value is not the image's: `.some(nil)` for a key the image holds and this
    /// snapshot does not. Without an image, only values.
    private var differing: [PlistKey: PlistValue?] = [:]

    init(_ values: PlistDictionary = PlistDictionary()) {
        differing = values.storage
    }

    subscript(key: PlistKey) -> PlistValue? {
        if !differing.isEmpty, let value = differing[key] { return value }
        return image?.value(of: key)
    }

    /// Sets `value` for `key` (`nil` removes it); returns the value it replaced.
    @discardableResult
    mutating func set(_ key: PlistKey, _ value: PlistValue?) -> PlistValue? {
        guard let image else {
            guard let value else { return differing.removeValue(forKey: key) ?? nil }
            return differing.updateValue(value, forKey: key) ?? nil
        }
        // A key not apart yet holds the image's value.
        return differing.updateValue(value, forKey: key) ?? image.value(of: key)
    }

    /// Every key held.
    var keys: Set<PlistKey> {
        var keys = Set(image?.keys ?? [])
        for (key, value) in differing {
            if value == nil { keys.remove(key) } else { keys.insert(key) }
        }
        return keys
    }

    /// Every value, decoded: a copy of the suite, for the paths that need one.
    var dictionary: PlistDictionary {
        var values = PlistDictionary()
        if let image {
            values.storage.reserveCapacity(image.keys.count)
            for (i, key) in image.keys.enumerated() where differing[key] == nil { values.storage[key] = image.value(at: i) }
        }
        for case let (key, value?) in differing { values.storage[key] = value }
        return values
    }

    /// Makes `image` (a file just read or written, whose values this snapshot holds but for the
    /// keys in `apart`) the base. With no image, every value is kept apart.
    mutating func rebase<Keys: Sequence<PlistKey>>(on image: SuiteImage?, apart: Keys) {
        guard let image else {
            if self.image != nil { self = SuiteSnapshot(dictionary) }
            return
        }
        var kept: [PlistKey: PlistValue?] = [:]
        for key in apart { kept.updateValue(self[key], forKey: key) }
        (self.image, differing) = (image, kept)
    }
}

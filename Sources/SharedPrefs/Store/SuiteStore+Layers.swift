/// The system layers of a store: read at opening, watched with the suite, and adopted through
/// the one way the state changes.
extension SuiteStore {
    /// Re-reads the system layers as a job of the owner's: on this thread when it may, else queued
    /// once for a burst.
    func scheduleLayerReload() {
        if owner.isCurrent { return reloadLayers() }
        if owner.runIfIdle({ reloadLayers() }) { return }
        guard layerReloadScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        owner.async { [self] in
            layerReloadScheduled.store(false, ordering: .releasing)
            reloadLayers()
        }
    }

    /// How long a system file that vanished, emptied or stopped parsing must stay so before a running
    /// process acts on it: replaced in place (`install`, `tee`), it is so for a moment, and would lift a
    /// lock. Only a loss waits (the safe side); what is added counts at once. (200 ms was too short
    /// under a loaded ThreadSanitizer run.)
    static let layerSettle = Duration.seconds(1)

    /// Reads the system layers, adopts them (a loss once confirmed, ``layerSettle``), and watches their
    /// files while the suite is watched. `confirming`: adopts a loss too.
    func reloadLayers(confirming: Bool = false) {
        guard let layerIdentity else { return }
        var (layers, watched, problems) = SystemLayers.load(layerIdentity)
        if layerIdentity.launchArguments { layers.arguments = LaunchArguments.values }
        let loses = !confirming && state.withLock { s in
            (s.layers ?? SystemLayers()).loses(to: layers) || !s.newNotices(problems).isEmpty
        }
        if !loses {
            adoptLayers(layers.isEmpty ? nil : layers, problems: problems)
        } else if layerConfirmScheduled.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged {
            // Confirmed by a settle without an event; after one (a replacement still going on),
            // read as any other time: a loss still seen waits for a settle of its own.
            let events = layerEvents.load(ordering: .acquiring)
            owner.async(after: Self.layerSettle) { [self] in
                layerConfirmScheduled.store(false, ordering: .releasing)
                reloadLayers(confirming: layerEvents.load(ordering: .acquiring) == events)
            }
        }
        guard subscription.withLock({ $0 != nil }) else { return }
        // Watches no longer needed are handed out and released here, after the lock: their
        // release unwatches.
        let (added, _) = layerWatches.withLock { watches -> (Set<SystemLayers.Watched>, [Subscription]) in
            let gone = watches.keys.filter { !watched.contains($0) }
            return (watched.subtracting(watches.keys), gone.compactMap { watches.removeValue(forKey: $0) })
        }
        for place in added {
            let id = InotifyWatcher.shared.watch(DirectoryLocation(trusted: place.directory), fileName: place.name) { [weak self] event in
                guard case .changed = event, let self else { return }
                layerEvents.add(1, ordering: .releasing)
                scheduleLayerReload()
            }
            layerWatches.withLock { $0[place] = Subscription { InotifyWatcher.shared.unwatch(id) } }
        }
    }

    /// Makes `layers` the suite's system layers: observers hear each key whose value or writability
    /// changed, with the layer as origin. New failures are logged and reported.
    package func adoptLayers(_ layers: SystemLayers?, problems: [PreferenceError] = []) {
        let fresh = change { s, changes -> [PreferenceError] in
            let fresh = s.newNotices(problems)
            s.layerNotices = problems
            let old = s.layers
            guard old != layers else { return fresh }
            var keys = (old?.keys ?? []).union(layers?.keys ?? [])
            if old?.lockedPrefixes.isEmpty == false || layers?.lockedPrefixes.isEmpty == false {
                for key in s.values.keys.union(s.registered.storage.keys) where old?.lock(of: key) != nil || layers?.lock(of: key) != nil {
                    keys.insert(key)
                }
            }
            let before = keys.map { ($0, s.visible($0), old?.lock(of: $0) != nil) }
            s.layers = layers
            s.ignoredLockedKeys = s.ignoredLockedKeys.filter { layers?.lock(of: $0) != nil }
            guard !s.observers.isEmpty else { return fresh }
            for (key, oldValue, wasLocked) in before.sorted(by: { $0.0.string < $1.0.string }) {
                let newValue = s.visible(key)
                let isLocked = layers?.lock(of: key) != nil
                guard oldValue != newValue || wasLocked != isLocked else { continue }
                let layer = wasLocked != isLocked ? .locked : layers?.sources[key]?.layer ?? old?.sources[key]?.layer ?? .administrator
                changes.append(PreferenceChange(suite: name, key: key.string, oldValue: oldValue, newValue: newValue, origin: .layer(layer)))
            }
            return fresh
        }
        for problem in fresh {
            logger.warning("\(problem)")
            report(problem)
        }
    }

    /// Where the value of `key` comes from; `nil` when no layer holds it.
    func source(ofKey key: String) -> PreferenceSource? {
        watch()
        let key = PlistKey(key)
        return state.withLock { s in
            let (value, source) = (s.layers ?? SystemLayers()).explain(key, stored: { s.values[$0] }, file: backend.location)
            // A locked key no layer gives a value reads the registered default, if any.
            if value != nil || (source != nil && s.registered.storage[key] != nil) { return source }
            return s.registered.storage[key] == nil ? nil : PreferenceSource(layer: .registered, path: nil, lockPath: nil)
        }
    }

    /// The locks file that locks `key`, if one does.
    func lock(of key: String) -> String? {
        watch()
        return state.withLock { $0.layers?.lock(of: PlistKey(key)) }
    }
}

#if Etcd
import Foundation
import SharedPrefs

/// How an etcd suite reaches its cluster, and where it keeps its offline cache.
public struct EtcdOptions: Sendable, Hashable {
    /// How long one request (or a connection) waits for a member before trying the next; default
    /// 5 seconds. A watch stream that carries nothing for this long asks its member for progress,
    /// which must answer within it too, or the stream moves to the next member: a member that
    /// stops answering (a hung process, a link that died without a reset) is left within twice
    /// this time. From 1 ms to a day; another is refused when the suite opens
    /// (``PreferenceError/Code/unsupportedOperation``).
    public var timeout: Duration
    /// Where the suite's last known state and unaccepted writes are kept; default ``OfflineCache/automatic``.
    public var offlineCache: OfflineCache

    /// Where an etcd suite keeps its last known state and the writes the cluster has not accepted
    /// yet, so that it opens, reads and takes writes while the cluster is unreachable.
    public enum OfflineCache: Sendable, Hashable {
        /// `$XDG_CACHE_HOME/sharedprefs/etcd/` (else `~/.cache/sharedprefs/etcd/`), one file per
        /// endpoints, prefix and etcd identity (``EtcdOptions/credentials``' user, ``TLS``'s
        /// client certificate file), shared by the processes of this user on this machine that reach
        /// the cluster as that identity.
        case automatic
        /// This suite file (created, with its directory, if missing).
        case file(URL)
        /// None: opening fails while the cluster is unreachable, and writes not yet accepted live
        /// only in this process's memory.
        case none
    }

    /// TLS for `https://` endpoints; `nil` (default): the system's trust roots, no client certificate.
    public var tls: TLS?

    /// TLS for `https://` endpoints, as PEM files: the CA that signed the members' certificates
    /// (etcd's `--trusted-ca-file`), and for a cluster that checks its clients
    /// (`--client-cert-auth`), this client's certificate and private key.
    public struct TLS: Sendable, Hashable {
        /// The CA to trust instead of the system's; `nil`: the system's.
        public var certificateAuthority: URL?
        /// This client's certificate (chain), for `--client-cert-auth`.
        public var certificate: URL?
        /// The private key of ``certificate``.
        public var privateKey: URL?

        public init(certificateAuthority: URL? = nil, certificate: URL? = nil, privateKey: URL? = nil) {
            self.certificateAuthority = certificateAuthority
            self.certificate = certificate
            self.privateKey = privateKey
        }
    }

    /// A user of etcd's own authentication (`etcdctl auth enable`); `nil` (default): none, or the
    /// user named by ``tls``'s client certificate.
    public var credentials: Credentials?

    /// A user name and password of etcd's authentication. The suite asks etcd for a token with
    /// them (`Authenticate`) before its first request, and again once etcd no longer takes the
    /// token (it expires after etcd's `--auth-token-ttl` unused). Against a cluster that has no
    /// authentication enabled they are not needed, and not sent. The password is never printed.
    ///
    /// ```swift
    /// let options = EtcdOptions(credentials: .init(user: "app", password: secret))
    /// let suite = try PreferenceSuite(etcd: endpoints, prefix: "apps/demo/", options: options)
    /// ```
    public struct Credentials: Sendable, Hashable, CustomStringConvertible {
        /// The etcd user; its roles decide which keys the suite may read and write.
        public var user: String
        /// The user's password.
        public var password: String

        public init(user: String, password: String) {
            self.user = user
            self.password = password
        }

        /// The user, and the password hidden.
        public var description: String { "Credentials(user: \(user), password: hidden)" }
    }

    public init(timeout: Duration = .seconds(5), offlineCache: OfflineCache = .automatic, tls: TLS? = nil, credentials: Credentials? = nil) {
        self.timeout = timeout
        self.offlineCache = offlineCache
        self.tls = tls
        self.credentials = credentials
    }
}

extension PreferenceSuite {
    /// Opens a suite stored under a key prefix of an etcd v3 cluster, for processes on several
    /// machines: the same API as a file suite (reads from memory, coalesced writes, `update` as a
    /// compare-and-swap, per-key observers with old and new value).
    ///
    /// ```swift
    /// let suite = try PreferenceSuite(etcd: ["http://10.0.0.1:2379", "http://10.0.0.2:2379"], prefix: "apps/demo/")
    /// ```
    ///
    /// Each suite key is one etcd key, `prefix` + key; each value a binary property list. The
    /// suite is read in full here, then followed with a watch of the prefix. Every object for the
    /// same endpoints and prefix in a process shares one live store, opened with the first one's
    /// `options`.
    ///
    /// While the cluster is unreachable, the suite works from its offline cache (see
    /// ``EtcdOptions/OfflineCache``): it opens with the last known values, and writes are kept
    /// there and sent when the cluster answers, each key's write winning over what another client
    /// wrote to that key meanwhile (keys it did not write keep the other client's values), as
    /// writes to a suite file merge. An `update` needs the cluster: offline it throws
    /// ``PreferenceError/Code/clusterUnreachable``.
    ///
    /// System layers (administrators' and packages' defaults and locks) are this host's files, as
    /// for a file suite, for the suite named by the prefix with each `/` as `.` (`apps/demo/` is
    /// `apps.demo`: `/etc/sharedprefs/apps.demo.plist`, `/etc/sharedprefs/locks/apps.demo`).
    ///
    /// - Parameters:
    ///   - endpoints: The members' client URLs (`http://host:2379`, `https://…` with ``EtcdOptions/tls``);
    ///     requests go to the last one that answered, and on to the next when it does not.
    ///   - prefix: The suite's key prefix; end it with a separator (`/`) so that no other suite's
    ///     prefix starts with it.
    ///   - options: The timeout, the offline cache, TLS, credentials.
    /// - Throws: ``PreferenceError`` with ``PreferenceError/Code/clusterUnreachable`` when no
    ///   endpoint answers and the offline cache holds no state of the suite, or
    ///   ``PreferenceError/Code/invalidName`` for an empty prefix or endpoint list or an endpoint
    ///   that is no `http://` or `https://` URL, ``PreferenceError/Code/unsupportedOperation`` for a
    ///   timeout outside 1 ms to a day, or ``PreferenceError/Code/ioFailure`` for a TLS file that
    ///   cannot be read (or is no regular file of at most 1 MiB).
    @available(*, noasync, message: "it waits for the cluster, which would hold a thread of Swift's cooperative pool: in async code use 'try await PreferenceSuite.open(etcd:prefix:options:)'.")
    public convenience init(etcd endpoints: [String], prefix: String, options: EtcdOptions = EtcdOptions()) throws(PreferenceError) {
        guard !endpoints.isEmpty, !prefix.isEmpty else {
            throw PreferenceError(code: .invalidName, message: "An etcd suite needs at least one endpoint (http://host:2379) and a non-empty key prefix (got \(endpoints.count) endpoint(s) and prefix \"\(prefix)\").")
        }
        let client = try EtcdClient(endpoints: endpoints, options: options)
        let cache: EtcdCache? = switch options.offlineCache {
        case .automatic:
            try EtcdCache(fileURL: EtcdCache.defaultURL(endpoints: client.endpoints, prefix: prefix, user: options.credentials?.user, certificate: options.tls?.certificate))
        case .file(let url): try EtcdCache(fileURL: url)
        case .none: nil
        }
        // One live store per cluster and prefix in this process, flushed at exit like a file suite's.
        self.init(store: try StoreRegistry.store(id: EtcdSuite(endpoints: client.endpoints.sorted(), prefix: prefix, tls: options.tls, user: options.credentials?.user)) { () throws(PreferenceError) in
            let backend = EtcdBackend(client: client, prefix: prefix, cache: cache)
            let (loaded, queued) = try backend.open()
            let store = SuiteStore(name: prefix, backend: backend, loaded: loaded, layers: Self.layerIdentity(prefix: prefix))
            if !queued.isEmpty { store.apply(queued) }
            return store
        })
    }
}

extension PreferenceSuite {
    /// ``init(etcd:prefix:options:)`` for async code: the cluster is asked on a thread of its own,
    /// so no thread of Swift's cooperative pool waits for it.
    ///
    /// ```swift
    /// let suite = try await PreferenceSuite.open(etcd: endpoints, prefix: "apps/demo/")
    /// ```
    public static func open(etcd endpoints: [String], prefix: String, options: EtcdOptions = EtcdOptions()) async throws(PreferenceError) -> PreferenceSuite {
        try await withCheckedContinuation { (continuation: CheckedContinuation<Result<PreferenceSuite, PreferenceError>, Never>) in
            Thread.detachNewThread {
                continuation.resume(returning: Result { () throws(PreferenceError) in try PreferenceSuite(etcd: endpoints, prefix: prefix, options: options) })
            }
        }.get()
    }

    /// The suite whose system layers apply to the etcd suite under `prefix`: its `/`s as `.`s,
    /// with none at either end; `nil` when that is no valid suite name.
    package static func layerIdentity(prefix: String) -> SystemLayerIdentity? {
        let name = prefix.split(separator: "/", omittingEmptySubsequences: true).joined(separator: ".")
        guard (try? PreferenceSuite.validate(suiteName: name)) != nil else { return nil }
        return SystemLayerIdentity(suiteName: name, group: nil)
    }
}

/// What identifies an etcd suite in this process: its cluster and prefix.
private struct EtcdSuite: Hashable, Sendable {
    var endpoints: [String]
    var prefix: String
    /// How it reaches the cluster, and as whom: what one user may read and write, another may not.
    var tls: EtcdOptions.TLS?
    var user: String?
}
#endif

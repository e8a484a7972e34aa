#if Etcd
import SharedPrefs

extension PreferenceError.Code {
    /// No member of the etcd cluster answered (or none with a leader); writes stay pending and
    /// are retried, the watch resumes where it stopped.
    public static let clusterUnreachable = PreferenceError.Code("clusterUnreachable")
    /// The etcd watch fell below the cluster's compaction point: the suite was read again in
    /// full and diffed, so observers hear of every key that changed, not of each step.
    public static let resynchronized = PreferenceError.Code("resynchronized")
}
#endif

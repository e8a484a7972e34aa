#if canImport(Glibc)
import Glibc
#endif
import SystemPackage

/// The bytes of a suite file to write: whole, or (``SuiteImage/splice(_:)``) ranges of the file
/// it was made on, each followed by new bytes. A large file is then written from those ranges as
/// they are, in one `writev`, and copied into one array only once it is in place: a one-key
/// change of a 3.6 MB suite reached another process in 2.2 ms with the copy made first, and
/// 1.6 ms so (prefs-bench row 6).
struct FileBytes {
    /// What the ranges of ``pieces`` are of, or the whole file when there are none.
    private(set) var base: [UInt8]
    private(set) var pieces: [(old: Range<Int>, new: [UInt8])]

    /// A whole file.
    init(_ bytes: [UInt8]) {
        base = bytes
        pieces = []
    }

    /// The ranges of `base` in order, each followed by its new bytes; the last new bytes end with
    /// the binary trailer.
    init(base: [UInt8], pieces: [(old: Range<Int>, new: [UInt8])]) {
        self.base = base
        self.pieces = pieces
    }

    var count: Int {
        pieces.isEmpty ? base.count : pieces.reduce(0) { $0 + $1.old.count + $1.new.count }
    }

    /// Makes the file carry `sequence` (``PropertyListFormat/number(_:_:)``), without a copy.
    mutating func number(_ sequence: UInt64) {
        guard !pieces.isEmpty else { return PropertyListFormat.number(&base, sequence) }
        PropertyListFormat.numberTrailer(&pieces[pieces.count - 1].new, sequence)
    }

    /// The file in one array (`base` itself for a whole file).
    func joined() -> [UInt8] {
        guard !pieces.isEmpty else { return base }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        base.withUnsafeBufferPointer { base in
            for piece in pieces {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: base[piece.old]))
                bytes.append(contentsOf: piece.new)
            }
        }
        return bytes
    }

    /// Writes the file to `fd`, from where it is, in one `writev` (more after a short write).
    func write(to fd: CInt) -> Result<Void, Errno> {
        guard !pieces.isEmpty else { return Syscall.writeAll(fd, base) }
        return base.withUnsafeBytes { base in
            // The new bytes' buffers stay valid while the closures they were lent to run.
            func write(from index: Int, _ vectors: [iovec]) -> Result<Void, Errno> {
                guard index < pieces.count else { return Syscall.writeAll(fd, vectors) }
                let old = pieces[index].old
                return pieces[index].new.withUnsafeBytes { new in
                    write(from: index + 1, vectors + [
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: base.baseAddress! + old.lowerBound), iov_len: old.count),
                        iovec(iov_base: UnsafeMutableRawPointer(mutating: new.baseAddress), iov_len: new.count),
                    ])
                }
            }
            return write(from: 0, [])
        }
    }
}

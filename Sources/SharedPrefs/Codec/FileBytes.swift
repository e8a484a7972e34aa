#if canImport(Glibc)
import Glibc
#endif
import SystemPackage

/// The bytes of a suite file to write: whole, or (``SuiteImage/splice(_:)``) ranges of the file
/// it was made on, each followed by new bytes. A large file is then written from those ranges as
/// they are, in one `writev`, and copied into one array only once it is in place: the copy,
/// made first, was a third of the time a one-key change of a 3.6 MB suite took to reach another
/// process (BENCHMARKS.md, "Change stream, part 3").
struct FileBytes {
    /// What the ranges of ``pieces`` are of, or the whole file when there are none.
    private(set) var base: [UInt8]
    /// The new bytes the pieces add, in one buffer; the last piece's end with the binary trailer.
    private(set) var added: [UInt8]
    /// In order: a range of `base`, then one of `added`.
    let pieces: [(old: Range<Int>, new: Range<Int>)]

    /// A whole file.
    init(_ bytes: [UInt8]) {
        (base, added, pieces) = (bytes, [], [])
    }

    init(base: [UInt8], added: [UInt8], pieces: [(old: Range<Int>, new: Range<Int>)]) {
        (self.base, self.added, self.pieces) = (base, added, pieces)
    }

    var count: Int {
        pieces.isEmpty ? base.count : pieces.reduce(0) { $0 + $1.old.count + $1.new.count }
    }

    /// Makes the file carry `sequence` (``PropertyListFormat/number(_:_:)``), without a copy.
    mutating func number(_ sequence: UInt64) {
        if pieces.isEmpty { PropertyListFormat.number(&base, sequence) } else { PropertyListFormat.numberTrailer(&added, sequence) }
    }

    /// The file in one array (`base` itself for a whole file).
    func joined() -> [UInt8] {
        guard !pieces.isEmpty else { return base }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for piece in pieces {
            bytes += base[piece.old]
            bytes += added[piece.new]
        }
        return bytes
    }

    /// Writes the file to `fd`, from where it is, in one `writev` (more after a short write).
    func write(to fd: CInt) -> Result<Void, Errno> {
        guard !pieces.isEmpty else { return Syscall.writeAll(fd, base) }
        return base.withUnsafeBytes { base in
            added.withUnsafeBytes { added in
                Syscall.writeAll(fd, pieces.flatMap { piece in
                    [iovec(iov_base: UnsafeMutableRawPointer(mutating: base.baseAddress! + piece.old.lowerBound), iov_len: piece.old.count),
                     iovec(iov_base: UnsafeMutableRawPointer(mutating: added.baseAddress! + piece.new.lowerBound), iov_len: piece.new.count)]
                })
            }
        }
    }
}

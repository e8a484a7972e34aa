// libFuzzer entry point for the property-list decoders: any input either fails to decode with a
// thrown error, or decodes to a value that re-encodes in both formats and decodes back equal (in
// XML, as XML keeps it: dates in whole seconds).
// Built and run by Fuzz/run (swiftc -sanitize=fuzzer,address); the corpus it keeps is replayed
// by the test `theFuzzCorpusDecodesOrFailsCleanly`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecode(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let suite = try? PropertyListFormat.decodeSuite(bytes) else { return 0 }
    guard (try? PropertyListFormat.decodeSuite(PropertyListFormat.binary.encode(suite))) == suite else {
        fatalError("binary round trip changed a decoded suite of \(suite.count) keys")
    }
    guard (try? PropertyListFormat.decodeSuite(PropertyListFormat.xml.encode(suite))) == XMLPropertyList.storable(suite) else {
        fatalError("XML round trip changed a decoded suite of \(suite.count) keys")
    }
    return 0
}

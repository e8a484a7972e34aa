import Foundation

/// `prefs-bench --check PATH`: the table of issue 29's targets from one run's JSON, each with its
/// figure and bound, met or not, and every row that lost more than 1 % of what it sent. Exits 1
/// when something is not met or not measured, 2 when the file cannot be read.
enum Check {
    static func run(_ path: String) -> Int32 {
        let rows: [Row]
        do {
            rows = try JSONDecoder().decode([Row].self, from: Data(contentsOf: URL(filePath: path)))
        } catch {
            FileHandle.standardError.write(Data("prefs-bench: could not read the results in \(path): \(error.localizedDescription). Pass the JSON a run wrote (--json PATH).\n".utf8))
            return 2
        }
        let targets = rows.flatMap { $0.targets ?? [] }
        var missed = 0
        print("| target | figure | bound | |")
        print("|---|---|---|---|")
        for what in Target.all {
            guard let target = targets.first(where: { $0.what == what }) else {
                print("| \(what) | not measured in this run | | not met |")
                missed += 1
                continue
            }
            if !target.isMet { missed += 1 }
            print("| \(what) | \(String(format: "%.2f", target.figure)) | \(target.atMost ? "≤" : "≥") \(String(format: "%g", target.bound)) | \(target.isMet ? "met" : "not met") |")
        }
        for row in rows {
            guard let sent = row.sent, Double(sent - row.n) > 0.01 * Double(sent) else { continue }
            missed += 1
            print("| \(row.group): \(row.name): changes measured of those sent | \(row.n) of \(sent) | ≥ 99 % | not met |")
        }
        return missed == 0 ? 0 : 1
    }
}

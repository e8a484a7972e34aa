import Foundation

/// `prefs-bench --check RUN.json...`: the targets of one run's JSON, or of several runs' (min,
/// median and max of each figure, met or not by the median), and every row of any run that lost
/// more than 1 % of the changes it sent or any increment. Exits 1 when something is not met, lost
/// or not measured, 2 when a file cannot be read.
enum Check {
    static func run(_ paths: [String]) -> Int32 {
        var runs: [[Row]] = []
        for path in paths {
            do {
                runs.append(try JSONDecoder().decode([Row].self, from: Data(contentsOf: URL(filePath: path))))
            } catch {
                FileHandle.standardError.write(Data("prefs-bench: could not read the results in \(path): \(error). Pass the JSON a run wrote (--json PATH).\n".utf8))
                return 2
            }
        }
        var failed = 0
        let several = runs.count > 1
        print(several ? "| target | min | median | max | bound | |\n|---|---|---|---|---|---|" : "| target | figure | bound | |\n|---|---|---|---|")
        for what in Target.all {
            let targets = runs.map { rows in rows.lazy.flatMap { $0.targets ?? [] }.first { $0.what == what } }
            guard let target = targets.compactMap({ $0 }).first, targets.allSatisfy({ $0 != nil }) else {
                print("| \(what) | not measured in \(several ? "every run" : "this run") |\(several ? " | | |" : "") | not met |")
                failed += 1
                continue
            }
            let figures = targets.compactMap { $0?.figure }
            let figure = median(figures)
            if !target.isMet(figure) { failed += 1 }
            let bound = "\(target.atMost ? "≤" : "≥") \(String(format: "%g", target.bound))"
            let shown = several ? [figures.min()!, figure, figures.max()!] : [figure]
            print("| \(what) | " + shown.map { String(format: "%.2f", $0) }.joined(separator: " | ") + " | \(bound) | \(target.isMet(figure) ? "met" : "not met") |")
        }
        for (i, rows) in runs.enumerated() {
            for row in rows {
                guard let failure = row.lossFailure else { continue }
                failed += 1
                print("| \(several ? "run \(i + 1): " : "")\(row.group): \(row.name) | \(failure) |\(several ? " | | |" : "") | not met |")
            }
        }
        print()
        for (i, rows) in runs.enumerated() {
            print("run \(i + 1) (\(paths[i])): \(rows.first { $0.id == "0.run" }?.note ?? "no run information")")
        }
        return failed == 0 ? 0 : 1
    }
}

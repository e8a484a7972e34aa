import Foundation
import SwiftDiagnostics
import SwiftSyntax

/// The arguments of `@ObservablePrefs` / `@ObservableDefaults`, as source text where they are
/// passed through and as values where they shape the expansion.
struct ClassOptions {
    var suiteName: String = "nil"
    var prefix: String = ""
    var prefixNode: Syntax?
    var ignoreExternalChanges: String = "false"
    var autoInit = true
    var observeFirst = false
    /// `didSet` of persisted properties runs on changes from other processes (and instances) too.
    var didSetRunsOnExternalChanges = false
    /// The class is main-actor isolated by its module's default isolation, without the attribute.
    var defaultIsolationIsMainActor = false
    /// `@ObservableCloud(developmentMode: true)`: an in-memory suite.
    var inMemory = false
    /// `@ObservableCloud(syncImmediately:)`, as source text: the generated initializer's default
    /// (it has no effect: every change is written at once).
    var syncImmediately = "false"
    var diagnostics: [Diagnostic] = []

    init(_ attribute: AttributeSyntax) {
        guard case .argumentList(let arguments) = attribute.arguments else { return }
        for argument in arguments {
            let text = argument.expression.trimmedDescription
            switch argument.label?.text {
            case "suiteName": suiteName = text
            case "prefix":
                prefixNode = Syntax(argument.expression)
                if argument.expression.is(NilLiteralExprSyntax.self) { break }
                guard let literal = argument.expression.stringLiteralValue else {
                    diagnostics.append(Diagnostic(.invalidPrefix, at: argument.expression, "The prefix must be a string literal, so that keys are known at compile time."))
                    break
                }
                prefix = literal.trimmingCharacters(in: .whitespacesAndNewlines)
            case "ignoreExternalChanges": ignoreExternalChanges = text
            case "syncImmediately": syncImmediately = text
            case "autoInit", "observeFirst", "developmentMode", "didSetRunsOnExternalChanges", "defaultIsolationIsMainActor":
                guard let value = argument.expression.as(BooleanLiteralExprSyntax.self)?.literal.tokenKind == .keyword(.true) ? true
                    : argument.expression.as(BooleanLiteralExprSyntax.self) != nil ? false : nil
                else {
                    diagnostics.append(Diagnostic(.flagNotLiteral, at: argument.expression, "\(argument.label!.text) must be true or false written out: it decides what the macro generates."))
                    break
                }
                switch argument.label?.text {
                case "autoInit": autoInit = value
                case "observeFirst": observeFirst = value
                case "didSetRunsOnExternalChanges": didSetRunsOnExternalChanges = value
                case "defaultIsolationIsMainActor": defaultIsolationIsMainActor = value
                default: inMemory = value
                }
            default: break  // limitToInstance: accepted; changes always cross processes at once here.
            }
        }
        if let prefixNode, let problem = Self.prefixProblem(prefix) {
            diagnostics.append(Diagnostic(.invalidPrefix, at: prefixNode, "The prefix \"\(prefix)\" \(problem); use letters, digits, '.', '-' and '_'."))
        }
    }

    static func prefixProblem(_ prefix: String) -> String? {
        if prefix.unicodeScalars.contains(where: { !($0.properties.isAlphabetic && $0.isASCII) && !("0"..."9").contains($0) && !".-_".unicodeScalars.contains($0) }) {
            return "contains characters that do not belong in a key"
        }
        return nil
    }
}

/// What `@ObservablePrefs` does with one member.
enum PropertyRole {
    /// Persisted under `key` (without the class prefix).
    case persisted(key: String)
    /// Observable only: the macro adds `@ObservableOnly` (observeFirst mode).
    case addObservableOnly
    /// Left as it is: `@Ignore`, `@ObservableOnly` already, static, computed, or an observeFirst `let`.
    case untouched
    /// Cannot be handled; `diagnostics` say why.
    case invalid
}

struct PropertyAnalysis {
    var name: String = ""
    var role: PropertyRole = .untouched
    var keyNode: Syntax?
    var diagnostics: [Diagnostic] = []

    init(_ member: some DeclSyntaxProtocol, options: ClassOptions) {
        guard let property = member.as(VariableDeclSyntax.self) else { return }
        if property.modifiers.contains(where: { ["static", "class"].contains($0.name.text) }) { return }
        let backed = property.attribute(named: "PrefsBacked") ?? property.attribute(named: "DefaultsBacked") ?? property.attribute(named: "CloudBacked")
        if property.attribute(named: "Ignore") != nil || property.attribute(named: "ObservableOnly") != nil { return }
        guard property.bindings.count == 1, let binding = property.bindings.first,
            let identifier = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier
        else {
            diagnostics.append(Diagnostic(.multipleBindings, at: property, "Declare one property per line in an @ObservablePrefs class."))
            role = .invalid
            return
        }
        name = identifier.text.filter { $0 != "`" }
        if binding.isComputed {
            if let backed {
                diagnostics.append(Diagnostic(
                    .computedBacked, at: backed, "'\(name)' is a computed property; only stored properties can be persisted.",
                    fixIt: FixIt(message: PrefsFixIt(message: "Remove @\(backed.attributeName.trimmedDescription)"), changes: [.replace(oldNode: Syntax(property), newNode: Syntax(property.removing(backed)))])))
                role = .invalid
            }
            return
        }
        let persisted = !options.observeFirst || backed != nil
        if property.bindingSpecifier.tokenKind == .keyword(.let) {
            guard persisted else { return }
            var asVar = property.bindingSpecifier
            asVar.tokenKind = .keyword(.var)
            diagnostics.append(Diagnostic(
                .persistedLet, at: property.bindingSpecifier,
                "'\(name)' is a let constant and cannot be persisted; make it a var, or mark it @Ignore.",
                fixIt: FixIt(message: PrefsFixIt(message: "Make it a var"), changes: [.replace(oldNode: Syntax(property.bindingSpecifier), newNode: Syntax(asVar))])))
            role = .invalid
            return
        }
        guard persisted else {
            role = .addObservableOnly
            return
        }
        // An optional without initializer defaults to nil, as Swift gives it.
        if binding.initializer == nil, binding.typeAnnotation?.type.isOptional != true {
            diagnostics.append(Diagnostic(
                .missingDefault, at: binding,
                "'\(name)' needs a default value: it is what reads return when the suite has no value for the key."))
            role = .invalid
            return
        }
        var key = name
        // Later wins: ObservableDefaults' `@CloudBacked(keyValueStoreKey:)` over its `@CloudKey`.
        let keyAttributes: [(String, String?)] = [
            ("PrefsKey", nil), ("DefaultsKey", "userDefaultsKey"), ("DefaultsBacked", "userDefaultsKey"),
            ("CloudKey", "keyValueStoreKey"), ("CloudBacked", "keyValueStoreKey"),
        ]
        for (attributeName, label) in keyAttributes {
            guard let attribute = property.attribute(named: attributeName), case .argumentList(let arguments) = attribute.arguments,
                let argument = arguments.first(where: { $0.label?.text == label })
            else { continue }
            if argument.expression.is(NilLiteralExprSyntax.self) { continue }
            guard let literal = argument.expression.stringLiteralValue, !literal.isEmpty else {
                diagnostics.append(Diagnostic(.keyNotLiteral, at: argument.expression, "The key of '\(name)' must be a non-empty string literal."))
                role = .invalid
                return
            }
            key = literal
            keyNode = Syntax(argument.expression)
        }
        role = .persisted(key: key)
    }
}

extension VariableDeclSyntax {
    /// The declaration without `attribute`, keeping its position on the line.
    func removing(_ attribute: AttributeSyntax) -> VariableDeclSyntax {
        var copy = self
        copy.attributes = attributes.filter { $0.as(AttributeSyntax.self)?.id != attribute.id }
        return copy.with(\.leadingTrivia, leadingTrivia)
    }

    func attribute(named name: String) -> AttributeSyntax? {
        for element in attributes {
            guard case .attribute(let attribute) = element else { continue }
            let attributeName = attribute.attributeName.trimmedDescription
            if attributeName == name || attributeName.hasSuffix("." + name) { return attribute }
        }
        return nil
    }
}

extension PatternBindingSyntax {
    /// A getter, or accessors other than willSet/didSet.
    var isComputed: Bool {
        switch accessorBlock?.accessors {
        case .getter: return true
        case .accessors(let accessors):
            return accessors.contains { !["willSet", "didSet"].contains($0.accessorSpecifier.text) }
        case nil: return false
        }
    }
}

extension ExprSyntax {
    /// The value of a string literal without interpolation, escapes (`\t`, `\u{…}`) resolved.
    var stringLiteralValue: String? {
        self.as(StringLiteralExprSyntax.self)?.representedLiteralValue
    }
}

extension DeclGroupSyntax {
    var isMainActorIsolated: Bool {
        attributes.contains { element in
            guard case .attribute(let attribute) = element else { return false }
            let name = attribute.attributeName.trimmedDescription
            return name == "MainActor" || name == "_Concurrency.MainActor"
        }
    }
}

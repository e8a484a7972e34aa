import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxMacros

/// `@_PrefsProperty("key")`: a persisted property. The peer `_name` keeps the declared default
/// (captured once); the getter reads stored → registered → that default; the setter persists and
/// mutates only when the stored value really changes.
public struct PrefsPropertyMacro: AccessorMacro, PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let (name, key) = target(node, declaration) else { return [] }
        // willSet and didSet run around a local set, as on a stored property; their bodies are
        // closures applied at once, so that a `return` in one ends only it.
        let observer = declaration.as(VariableDeclSyntax.self)?.bindings.first?.observers ?? [:]
        let willSet = observer["willSet"].map { applying($0, to: "newValue") } ?? ""
        let oldValue = observer["didSet"] == nil ? "" : "\nlet oldValue = _$prefs.value(\(key.debugDescription), default: _\(name), codec)"
        let didSet = observer["didSet"].map { applying($0, to: "oldValue") } ?? ""
        return [
            """
            get {
                access(keyPath: \\.\(name))
                return _$prefs.value(\(literal: key), default: _\(name), _PrefsStorage.codec(_\(name)))
            }
            """,
            """
            set {
                let codec = _PrefsStorage.codec(_\(name))
                guard _$prefs.willChange(\(literal: key), to: newValue, default: _\(name), codec) else { return }\(raw: willSet)\(raw: oldValue)
                withMutation(keyPath: \\.\(name)) {
                    _$prefs.set(newValue, \(literal: key), codec)
                }\(raw: didSet)
            }
            """,
        ]
    }

    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let property = declaration.as(VariableDeclSyntax.self), target(node, declaration) != nil else { return [] }
        return [DeclSyntax(property.storage(prefix: "_", specifier: .let, keepingAccessors: false, defaultingToNil: true))]
    }

    private static func target(_ node: AttributeSyntax, _ declaration: some DeclSyntaxProtocol) -> (TokenSyntax, String)? {
        guard let property = declaration.as(VariableDeclSyntax.self), let name = property.singleName,
            case .argumentList(let arguments) = node.arguments, let key = arguments.first?.expression.stringLiteralValue
        else { return nil }
        return (name, key)
    }
}

/// `@ObservableOnly`: observable, not persisted; the shape of Observation's own tracked
/// properties. The peer `_name` holds the value and keeps any `willSet`/`didSet`.
public struct ObservableOnlyMacro: AccessorMacro, PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let property = declaration.as(VariableDeclSyntax.self), let name = property.singleName,
            property.bindingSpecifier.tokenKind == .keyword(.var), property.bindings.first?.isComputed == false
        else { return [] }
        var accessors: [AccessorDeclSyntax] = []
        if property.bindings.first?.initializer == nil {
            accessors.append(
                """
                @storageRestrictions(initializes: _\(name))
                init(initialValue) {
                    _\(name) = initialValue
                }
                """)
        }
        accessors += [
            """
            get {
                access(keyPath: \\.\(name))
                return _\(name)
            }
            """,
            """
            set {
                guard _PrefsStorage.shouldNotify(_\(name), newValue) else {
                    _\(name) = newValue
                    return
                }
                withMutation(keyPath: \\.\(name)) {
                    _\(name) = newValue
                }
            }
            """,
        ]
        return accessors
    }

    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let property = declaration.as(VariableDeclSyntax.self), property.singleName != nil,
            property.bindingSpecifier.tokenKind == .keyword(.var), property.bindings.first?.isComputed == false
        else { return [] }
        return [DeclSyntax(property.storage(prefix: "_", specifier: .var, keepingAccessors: true))]
    }
}

/// `@ObservableDefault(key)`: sindresorhus/Defaults' property macro, for a `var name: Type` in an
/// `@Observable` class (marked `@ObservationIgnored`, so that `@Observable` leaves it to this
/// macro). The getter tracks the property and reads `key` in its suite, and at the first access
/// starts invalidating the property when any process changes the key; the setter writes it.
public struct ObservableDefaultMacro: AccessorMacro, PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let (name, type, key) = target(node, declaration, context) else { return [] }
        return [
            """
            get {
                let key: PreferenceKey<\(type)> = \(key)
                _$observableDefault_\(name).start(key, self, \\.\(name), _$observationRegistrar)
                access(keyPath: \\.\(name))
                return _ObservableDefaultStorage.value(key)
            }
            """,
            """
            set {
                let key: PreferenceKey<\(type)> = \(key)
                withMutation(keyPath: \\.\(name)) {
                    _ObservableDefaultStorage.set(newValue, key)
                }
            }
            """,
        ]
    }

    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let (name, _, _) = target(node, declaration, nil) else { return [] }
        return ["@ObservationIgnored private let _$observableDefault_\(name) = SharedPrefsObservation._ObservableDefaultStorage()"]
    }

    /// The property's name and type and the key expression; `nil`, diagnosed once, for any other shape.
    private static func target(
        _ node: AttributeSyntax, _ declaration: some DeclSyntaxProtocol, _ context: (any MacroExpansionContext)?
    ) -> (TokenSyntax, TypeSyntax, ExprSyntax)? {
        guard let property = declaration.as(VariableDeclSyntax.self), property.bindingSpecifier.tokenKind == .keyword(.var),
            let name = property.singleName, let binding = property.bindings.first, let type = binding.typeAnnotation?.type.trimmed,
            binding.initializer == nil, binding.accessorBlock == nil,
            case .argumentList(let arguments) = node.arguments, let key = arguments.first?.expression.trimmed
        else {
            context?.diagnose(Diagnostic(
                .observableDefaultShape, at: declaration,
                "@ObservableDefault(key) applies to a stored 'var name: Type' without a value (the key holds the default) in an @Observable class, marked @ObservationIgnored."))
            return nil
        }
        return (name, type, key)
    }
}

/// `@PrefsKey`, `@PrefsBacked`, `@Ignore`, `@DefaultsKey`, `@DefaultsBacked`: markers that
/// `@ObservablePrefs` reads; they expand to nothing.
public struct MarkerMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax, providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        []
    }
}

/// An observer's body as a closure applied at once to `argument`, so that a `return` in it ends
/// only it: `willSet` and `didSet` where the macros run them.
func applying(_ observer: (parameter: String, body: String), to argument: String) -> String {
    "\n_ = { (\(observer.parameter)) in\n\(observer.body)\n}(\(argument))"
}

extension PatternBindingSyntax {
    /// The `willSet` and `didSet` of a stored property: the parameter's name and the body's statements.
    var observers: [String: (parameter: String, body: String)] {
        guard case .accessors(let accessors) = accessorBlock?.accessors else { return [:] }
        var found: [String: (parameter: String, body: String)] = [:]
        for accessor in accessors {
            let kind = accessor.accessorSpecifier.text
            guard kind == "willSet" || kind == "didSet", let body = accessor.body else { continue }
            let parameter = accessor.parameters?.name.text ?? (kind == "willSet" ? "newValue" : "oldValue")
            found[kind] = (parameter, body.statements.trimmedDescription)
        }
        return found
    }
}

extension VariableDeclSyntax {
    var singleName: TokenSyntax? {
        guard bindings.count == 1 else { return nil }
        return bindings.first?.pattern.as(IdentifierPatternSyntax.self)?.identifier.trimmed
    }

    /// `private let|var _name: Type = initializer`, without this package's attributes; with
    /// `defaultingToNil`, an optional without initializer gets `= nil`, as Swift gives a `var`.
    func storage(prefix: String, specifier: Keyword, keepingAccessors: Bool, defaultingToNil: Bool = false) -> VariableDeclSyntax {
        var binding = bindings.first!
        if defaultingToNil, binding.initializer == nil, binding.typeAnnotation?.type.isOptional == true {
            binding.initializer = InitializerClauseSyntax(equal: .equalToken(leadingTrivia: .space, trailingTrivia: .space), value: NilLiteralExprSyntax())
        }
        let identifier = binding.pattern.as(IdentifierPatternSyntax.self)!.identifier
        binding.pattern = PatternSyntax(IdentifierPatternSyntax(identifier: .identifier(prefix + identifier.text.filter { $0 != "`" })))
        if !keepingAccessors { binding.accessorBlock = nil }
        return VariableDeclSyntax(
            modifiers: [DeclModifierSyntax(name: .keyword(.private))],
            bindingSpecifier: .keyword(specifier),
            bindings: [binding.trimmed])
    }
}

extension TypeSyntax {
    /// `T?` or `T!`: Swift gives such a `var` without initializer `nil`.
    var isOptional: Bool {
        self.is(OptionalTypeSyntax.self) || self.is(ImplicitlyUnwrappedOptionalTypeSyntax.self)
            || self.as(IdentifierTypeSyntax.self)?.name.text == "Optional"
    }
}

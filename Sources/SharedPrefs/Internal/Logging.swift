import Logging

/// The library's logger. Bootstrap swift-log in your app to route or silence it.
let logger = Logger(label: "SharedPrefs")

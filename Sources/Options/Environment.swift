import CSys

public func getenvText(_ name: String) -> String? {
    guard let p = csys_getenv(name) else { return nil }
    return String(cString: p)
}

public func fileExists(_ path: String) -> Bool { csys_file_exists(path) != 0 }

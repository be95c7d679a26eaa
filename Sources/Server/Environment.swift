import CSys

func getenvText(_ name: String) -> String? {
    guard let p = csys_getenv(name) else { return nil }
    return String(cString: p)
}

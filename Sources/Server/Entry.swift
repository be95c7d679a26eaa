import PyBridge
import Core

public enum Main {
    public static func run() {
        print("todo")
    }
}

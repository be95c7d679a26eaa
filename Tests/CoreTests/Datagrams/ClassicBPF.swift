import Core

/// A classic BPF interpreter for the instructions ReuseportSteering uses,
/// with the kernel's semantics for them: a load outside the packet ends the
/// program with 0 (recorded here, since the program must never do it), the
/// jumps are forward and relative, RXHASH reads the flow hash given.
struct ClassicBPF {
    typealias Instruction = ReuseportSteering.Instruction
    let program: [Instruction]

    struct Run: Equatable {
        var result: UInt32
        var outOfBounds = false
        var steps = 0
    }

    func run(_ packet: [UInt8], rxhash: UInt32 = 0) -> Run {
        var a: UInt32 = 0
        var pc = 0
        var run = Run(result: 0)
        func load(_ k: UInt32, _ size: Int) -> UInt32? {
            if k == ReuseportSteering.rxhashOffset && size == 4 { return rxhash }
            let offset = Int(k)
            guard offset + size <= packet.count else { return nil }
            var v: UInt32 = 0
            for i in 0..<size { v = v << 8 | UInt32(packet[offset + i]) }
            return v
        }
        while pc < program.count {
            run.steps += 1
            let ins = program[pc]
            pc += 1
            switch ins.code {
            case ReuseportSteering.ldLen: a = UInt32(packet.count)
            case ReuseportSteering.ldW, ReuseportSteering.ldH, ReuseportSteering.ldB:
                let size = ins.code == ReuseportSteering.ldW ? 4 : ins.code == ReuseportSteering.ldH ? 2 : 1
                guard let v = load(ins.k, size) else {
                    run.outOfBounds = true
                    return run
                }
                a = v
            case ReuseportSteering.modK:
                precondition(ins.k != 0, "division by zero")
                a %= ins.k
            case ReuseportSteering.ja: pc += Int(ins.k)
            case ReuseportSteering.jeqK: pc += Int(a == ins.k ? ins.jt : ins.jf)
            case ReuseportSteering.jgeK: pc += Int(a >= ins.k ? ins.jt : ins.jf)
            case ReuseportSteering.jsetK: pc += Int(a & ins.k != 0 ? ins.jt : ins.jf)
            case ReuseportSteering.retK: run.result = ins.k; return run
            case ReuseportSteering.retA: run.result = a; return run
            default: preconditionFailure("instruction \(ins.code) not interpreted")
            }
        }
        preconditionFailure("fell off the end of the program")
    }
}

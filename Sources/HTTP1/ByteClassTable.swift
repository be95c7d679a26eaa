/// The byte classes the head parser's inner loops test, one byte per value,
/// so a test is one load and one AND with no branch per class member.
/// `ByteClassTests.testTableMatchesTheMasks` checks every entry against the
/// ABNF masks in `ByteClass`.
///
/// Why a table beside the masks: a field name costs one load and a test per
/// byte this way against two compares and a shift with the masks. With the
/// word-at-a-time scans (`Bytes+Words.swift`) it took the head parser from
/// 2,961 to 1,765 instructions per request (callgrind, WSGI hello over h1,
/// BENCHMARKS.md optimisation log).
@usableFromInline
enum ByteClassTable {
    /// tchar (RFC 9110 §5.6.2).
    @usableFromInline static let tchar: UInt8 = 1
    /// tchar except "_": the field-name loop runs on these and stops at "_"
    /// to note it (such names are dropped, see `FieldLine`).
    @usableFromInline static let nameByte: UInt8 = 2
    /// reg-name characters without pct-encoded: unreserved / sub-delims
    /// (RFC 3986 §3.2.2).
    @usableFromInline static let regName: UInt8 = 4

    /// A literal, so the compiler lays it out as constant data: no lazy
    /// initialisation and no allocation on first use.
    @usableFromInline static let table: [UInt8] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x0_
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x1_
        0, 7, 0, 3, 7, 3, 7, 7, 4, 4, 7, 7, 4, 7, 7, 0,  // 0x2_  ! " # $ % & ' ( ) * + , - . /
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0, 4, 0, 4, 0, 0,  // 0x3_  digits : ; < = > ?
        0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,  // 0x4_  @ A-O
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0, 0, 0, 3, 5,  // 0x5_  P-Z [ \ ] ^ _
        3, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,  // 0x6_  ` a-o
        7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 0, 3, 0, 7, 0,  // 0x7_  p-z { | } ~ DEL
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  // 0x8_  obs-text: none
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ]

    @inlinable @inline(__always)
    static func has(_ b: UInt8, _ cls: UInt8) -> Bool {
        table.withUnsafeBufferPointer { $0[Int(b)] } & cls != 0
    }
}

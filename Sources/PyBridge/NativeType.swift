import CPython
import CPyShim
import Core

/// Builds a C-level Python type (a heap type from `PyType_FromSpec`) whose
/// instances carry a fixed Swift payload after the object header.
///
/// The names and method tables are allocated once and live as long as the
/// process, as CPython requires of a type spec's strings and tables.
public struct NativeTypeBuilder {
    private let name: String
    private let basicSize: Int
    private var slots: [PyType_Slot] = []
    private var methods: [PyMethodDef] = []

    /// `payload` is the byte size of the Swift fields after PyObject_HEAD.
    public init(name: String, payload: Int) {
        self.name = name
        self.basicSize = MemoryLayout<PyObject>.stride + payload
    }

    public mutating func slot(_ id: Int32, _ pointer: UnsafeMutableRawPointer) {
        slots.append(PyType_Slot(slot: id, pfunc: pointer))
    }

    /// A METH_FASTCALL method: (self, args, nargs).
    public mutating func method(_ name: String, _ function: FastMethod, doc: String? = nil) {
        methods.append(PyMethodDef(ml_name: allocateCString(name),
                                   ml_meth: unsafeBitCast(function, to: PyCFunction.self),
                                   ml_flags: METH_FASTCALL,
                                   ml_doc: doc.map { UnsafePointer(allocateCString($0)) }))
    }

    /// A METH_NOARGS method.
    public mutating func method(noArgs name: String, _ function: PyCFunction, doc: String? = nil) {
        methods.append(PyMethodDef(ml_name: allocateCString(name), ml_meth: function, ml_flags: METH_NOARGS,
                                   ml_doc: doc.map { UnsafePointer(allocateCString($0)) }))
    }

    public func build() -> PyRef {
        var allSlots = slots
        if !methods.isEmpty {
            let table = UnsafeMutablePointer<PyMethodDef>.allocate(capacity: methods.count + 1)
            for (i, m) in methods.enumerated() { table[i] = m }
            table[methods.count] = PyMethodDef(ml_name: nil, ml_meth: nil, ml_flags: 0, ml_doc: nil)
            allSlots.append(PyType_Slot(slot: Py_tp_methods, pfunc: UnsafeMutableRawPointer(table)))
        }
        allSlots.append(PyType_Slot(slot: 0, pfunc: nil))
        let slotTable = UnsafeMutablePointer<PyType_Slot>.allocate(capacity: allSlots.count)
        for (i, s) in allSlots.enumerated() { slotTable[i] = s }
        let spec = UnsafeMutablePointer<PyType_Spec>.allocate(capacity: 1)
        spec.initialize(to: PyType_Spec(name: UnsafePointer(allocateCString(name)), basicsize: Int32(basicSize), itemsize: 0,
                                        flags: UInt32(Py_TPFLAGS_DEFAULT), slots: slotTable))
        guard let type = PyType_FromSpec(spec) else {
            fatalError("cannot create native type \(name)")
        }
        return type
    }
}

/// Access to the Swift payload stored after an object's header.
@inlinable
public func nativePayload<T>(_ object: PyRef, as type: T.Type) -> UnsafeMutablePointer<T> {
    UnsafeMutableRawPointer(object).advanced(by: MemoryLayout<PyObject>.stride).assumingMemoryBound(to: T.self)
}

/// A new instance of a native type (payload zeroed by tp_alloc).
public func nativeAllocate(_ type: PyRef) -> PyRef? {
    let t = UnsafeMutableRawPointer(type).assumingMemoryBound(to: PyTypeObject.self)
    return PyType_GenericAlloc(t, 0)
}

/// A METH_FASTCALL C function: (self, args, nargs) -> new reference or NULL.
public typealias FastMethod = @convention(c) (PyRef?, UnsafePointer<PyRef?>?, Py_ssize_t) -> PyRef?

//! A thin binding to Open MPI's C library (`libmpi.so.40`), opened at run time.
//!
//! Why not the `mpi` crate: it links libmpi when the plugin is built, so every program that
//! loads the plugin would load MPI; the plugin must load it only when it starts, and only under
//! an MPI launcher. It also needs libclang and an MPI compiler wrapper to build. We need a dozen
//! calls, so we resolve them ourselves. The handles and constants below are Open MPI's ABI
//! (handles are pointers to the library's predefined objects; `MPI_Status` is its layout):
//! another MPI implementation has another soname and is refused when opened.

use libloading::os::unix::{Library, Symbol, RTLD_GLOBAL, RTLD_NOW};
use std::ffi::{c_char, c_int, c_void};

/// The library opened, unless `OMPTARGET_MPI_LIBRARY` names another.
pub const DEFAULT_LIBRARY: &str = "libmpi.so.40";
/// Variable naming the MPI library to open.
pub const LIBRARY_VAR: &str = "OMPTARGET_MPI_LIBRARY";

pub const THREAD_MULTIPLE: c_int = 3;
const SUCCESS: c_int = 0;
const TAG_UB_KEY: c_int = 0;
/// The largest message we send in one call: MPI counts are C ints.
const CHUNK: usize = 1 << 30;

/// Open MPI's `MPI_Status`.
#[repr(C)]
#[derive(Default, Clone, Copy)]
pub struct Status {
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
    cancelled: c_int,
    ucount: usize,
}

/// A communicator handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comm(*mut c_void);
// SAFETY: MPI handles are plain pointers to library objects; the library is initialised with
// MPI_THREAD_MULTIPLE before they are shared.
unsafe impl Send for Comm {}
// SAFETY: as above.
unsafe impl Sync for Comm {}

/// A non-blocking operation in flight; complete it with [`Mpi::wait`] or [`Mpi::test`].
#[derive(Debug)]
pub struct Request(*mut c_void);
// SAFETY: a request handle may be completed by any thread (MPI_THREAD_MULTIPLE).
unsafe impl Send for Request {}

type Handle = *mut c_void;
type FnInt = unsafe extern "C" fn(*mut c_int) -> c_int;
type FnInitThread =
    unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int;
type FnCommInt = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;
type FnDup = unsafe extern "C" fn(Handle, *mut Handle) -> c_int;
type FnIdup = unsafe extern "C" fn(Handle, *mut Handle, *mut Handle) -> c_int;
type FnIallgather = unsafe extern "C" fn(
    *const c_void,
    c_int,
    Handle,
    *mut c_void,
    c_int,
    Handle,
    Handle,
    *mut Handle,
) -> c_int;
type FnSend = unsafe extern "C" fn(*const c_void, c_int, Handle, c_int, c_int, Handle) -> c_int;
type FnRecv =
    unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, c_int, Handle, *mut Status) -> c_int;
type FnIsend =
    unsafe extern "C" fn(*const c_void, c_int, Handle, c_int, c_int, Handle, *mut Handle) -> c_int;
type FnIrecv =
    unsafe extern "C" fn(*mut c_void, c_int, Handle, c_int, c_int, Handle, *mut Handle) -> c_int;
type FnIprobe = unsafe extern "C" fn(c_int, c_int, Handle, *mut c_int, *mut Status) -> c_int;
type FnWait = unsafe extern "C" fn(*mut Handle, *mut Status) -> c_int;
type FnTest = unsafe extern "C" fn(*mut Handle, *mut c_int, *mut Status) -> c_int;
type FnCancel = unsafe extern "C" fn(*mut Handle) -> c_int;
type FnVoid = unsafe extern "C" fn() -> c_int;
type FnSetErrhandler = unsafe extern "C" fn(Handle, Handle) -> c_int;
type FnErrorString = unsafe extern "C" fn(c_int, *mut c_char, *mut c_int) -> c_int;
type FnGetAttr = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_int) -> c_int;
/// `MPI_Comm_copy_attr_function` and `MPI_Comm_delete_attr_function`.
type CopyAttr =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// What [`Mpi::on_finalize`] runs: `MPI_Comm_delete_attr_function`'s signature.
pub type DeleteAttr = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;
type FnCreateKeyval = unsafe extern "C" fn(CopyAttr, DeleteAttr, *mut c_int, *mut c_void) -> c_int;
type FnSetAttr = unsafe extern "C" fn(Handle, c_int, *mut c_void) -> c_int;

/// The loaded library and the calls we use.
pub struct Mpi {
    initialized: Symbol<FnInt>,
    finalized: Symbol<FnInt>,
    init_thread: Symbol<FnInitThread>,
    query_thread: Symbol<FnInt>,
    is_thread_main: Symbol<FnInt>,
    comm_rank: Symbol<FnCommInt>,
    comm_size: Symbol<FnCommInt>,
    comm_dup: Symbol<FnDup>,
    comm_idup: Symbol<FnIdup>,
    iallgather: Symbol<FnIallgather>,
    send: Symbol<FnSend>,
    recv: Symbol<FnRecv>,
    isend: Symbol<FnIsend>,
    irecv: Symbol<FnIrecv>,
    iprobe: Symbol<FnIprobe>,
    wait_: Symbol<FnWait>,
    test_: Symbol<FnTest>,
    cancel: Symbol<FnCancel>,
    finalize: Symbol<FnVoid>,
    set_errhandler: Symbol<FnSetErrhandler>,
    error_string: Symbol<FnErrorString>,
    get_attr: Symbol<FnGetAttr>,
    create_keyval: Symbol<FnCreateKeyval>,
    set_attr: Symbol<FnSetAttr>,
    world: Handle,
    self_comm: Handle,
    byte: Handle,
    int: Handle,
    errors_return: Handle,
    _library: Library,
}

// SAFETY: the library's functions may be called from any thread once MPI runs at
// MPI_THREAD_MULTIPLE, which both sides require; the symbols are plain function pointers.
unsafe impl Send for Mpi {}
// SAFETY: as above.
unsafe impl Sync for Mpi {}

/// An MPI error: the call and the library's text.
pub type Error = String;

fn open_library(name: &str) -> Result<Library, Error> {
    // SAFETY: opening Open MPI runs its constructors, which only set up its own state.
    // RTLD_GLOBAL: Open MPI's components (dlopened by libmpi) resolve libmpi's symbols from
    // the global scope.
    unsafe { Library::open(Some(name), RTLD_NOW | RTLD_GLOBAL) }
        .map_err(|e| format!("cannot open the MPI library {name}: {e}"))
}

fn function<T>(library: &Library, name: &str) -> Result<Symbol<T>, Error> {
    // SAFETY: `T` is the C signature of `name` in Open MPI's mpi.h (the types above).
    unsafe { library.get::<T>(name.as_bytes()) }
        .map_err(|e| format!("the MPI library has no {name}: {e}"))
}

fn object(library: &Library, name: &str) -> Result<Handle, Error> {
    // SAFETY: the predefined handle is the address of the named object, never read here.
    let symbol = unsafe { library.get::<*mut c_void>(name.as_bytes()) }
        .map_err(|e| format!("the MPI library has no {name} (not Open MPI?): {e}"))?;
    Ok(*symbol as Handle)
}

fn int_count(len: usize) -> c_int {
    len.min(CHUNK) as c_int
}

impl Mpi {
    /// Opens the library (`OMPTARGET_MPI_LIBRARY` or [`DEFAULT_LIBRARY`]) without initialising it.
    pub fn open() -> Result<Mpi, Error> {
        let name = std::env::var(LIBRARY_VAR).unwrap_or_else(|_| DEFAULT_LIBRARY.into());
        let l = open_library(&name)?;
        Ok(Mpi {
            initialized: function(&l, "MPI_Initialized")?,
            finalized: function(&l, "MPI_Finalized")?,
            init_thread: function(&l, "MPI_Init_thread")?,
            query_thread: function(&l, "MPI_Query_thread")?,
            is_thread_main: function(&l, "MPI_Is_thread_main")?,
            comm_rank: function(&l, "MPI_Comm_rank")?,
            comm_size: function(&l, "MPI_Comm_size")?,
            comm_dup: function(&l, "MPI_Comm_dup")?,
            comm_idup: function(&l, "MPI_Comm_idup")?,
            iallgather: function(&l, "MPI_Iallgather")?,
            send: function(&l, "MPI_Send")?,
            recv: function(&l, "MPI_Recv")?,
            isend: function(&l, "MPI_Isend")?,
            irecv: function(&l, "MPI_Irecv")?,
            iprobe: function(&l, "MPI_Iprobe")?,
            wait_: function(&l, "MPI_Wait")?,
            test_: function(&l, "MPI_Test")?,
            cancel: function(&l, "MPI_Cancel")?,
            finalize: function(&l, "MPI_Finalize")?,
            set_errhandler: function(&l, "MPI_Comm_set_errhandler")?,
            error_string: function(&l, "MPI_Error_string")?,
            get_attr: function(&l, "MPI_Comm_get_attr")?,
            create_keyval: function(&l, "MPI_Comm_create_keyval")?,
            set_attr: function(&l, "MPI_Comm_set_attr")?,
            world: object(&l, "ompi_mpi_comm_world")?,
            self_comm: object(&l, "ompi_mpi_comm_self")?,
            byte: object(&l, "ompi_mpi_byte")?,
            int: object(&l, "ompi_mpi_int")?,
            errors_return: object(&l, "ompi_mpi_errors_return")?,
            _library: l,
        })
    }

    /// Inline for the success every call of a construct takes; the failure is apart.
    #[inline]
    fn check(&self, call: &str, code: c_int) -> Result<(), Error> {
        if code == SUCCESS {
            return Ok(());
        }
        self.failure(call, code)
    }

    #[cold]
    #[inline(never)]
    fn failure(&self, call: &str, code: c_int) -> Result<(), Error> {
        let mut text = [0 as c_char; 512];
        let mut len: c_int = 0;
        // SAFETY: MPI_Error_string writes at most MPI_MAX_ERROR_STRING (256) bytes and the length.
        unsafe { (self.error_string)(code, text.as_mut_ptr(), &mut len) };
        let bytes: Vec<u8> = text[..len.clamp(0, 511) as usize]
            .iter()
            .map(|&c| c as u8)
            .collect();
        Err(format!(
            "{call} failed: {} (MPI error {code})",
            String::from_utf8_lossy(&bytes)
        ))
    }

    fn flag(&self, call: &Symbol<FnInt>) -> bool {
        let mut flag: c_int = 0;
        // SAFETY: the call only writes the flag.
        unsafe { call(&mut flag) };
        flag != 0
    }

    /// The file of the MPI library opened (its soname resolved by the loader).
    pub fn library_file(&self) -> Option<std::path::PathBuf> {
        host_os::loaded_file(*self.initialized as usize)
    }

    /// Whether MPI_Init has been called (by anyone in this process).
    pub fn is_initialized(&self) -> bool {
        self.flag(&self.initialized)
    }

    /// Whether MPI_Finalize has been called.
    pub fn is_finalized(&self) -> bool {
        self.flag(&self.finalized)
    }

    /// Whether the calling thread is the one that initialised MPI (the only one that may call
    /// MPI below MPI_THREAD_SERIALIZED).
    pub fn is_thread_main(&self) -> bool {
        self.flag(&self.is_thread_main)
    }

    /// MPI_Init_thread asking for MPI_THREAD_MULTIPLE; returns the level provided.
    pub fn init_thread_multiple(&self) -> Result<c_int, Error> {
        let mut provided: c_int = 0;
        // SAFETY: null argc/argv are allowed by MPI-2; the call writes the provided level.
        let code = unsafe {
            (self.init_thread)(
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                THREAD_MULTIPLE,
                &mut provided,
            )
        };
        self.check("MPI_Init_thread", code)?;
        Ok(provided)
    }

    /// The thread level MPI was initialised with.
    pub fn thread_level(&self) -> c_int {
        let mut level: c_int = 0;
        // SAFETY: the call writes the level.
        unsafe { (self.query_thread)(&mut level) };
        level
    }

    pub fn world(&self) -> Comm {
        Comm(self.world)
    }

    /// A communicator of our own (collective over `comm`), whose errors are returned, not fatal.
    pub fn duplicate(&self, comm: Comm) -> Result<Comm, Error> {
        let mut new: Handle = std::ptr::null_mut();
        // SAFETY: the call writes the new handle.
        self.check("MPI_Comm_dup", unsafe { (self.comm_dup)(comm.0, &mut new) })?;
        // SAFETY: both handles are valid.
        let code = unsafe { (self.set_errhandler)(new, self.errors_return) };
        self.check("MPI_Comm_set_errhandler", code)?;
        Ok(Comm(new))
    }

    /// As [`Mpi::duplicate`], waiting without spinning: for a thread that waits beside the
    /// program's, for other processes that may be busy for a while.
    pub fn duplicate_politely(&self, comm: Comm) -> Result<Comm, Error> {
        let mut new: Handle = std::ptr::null_mut();
        let mut request = Request(std::ptr::null_mut());
        // SAFETY: `new` and `request` outlive the operation, which is waited for below.
        let code = unsafe { (self.comm_idup)(comm.0, &mut new, &mut request.0) };
        self.check("MPI_Comm_idup", code)?;
        self.wait_politely(&mut request)?;
        // SAFETY: both handles are valid.
        let code = unsafe { (self.set_errhandler)(new, self.errors_return) };
        self.check("MPI_Comm_set_errhandler", code)?;
        Ok(Comm(new))
    }

    /// Every rank's `value`, in rank order (collective, nonblocking), waited for without
    /// spinning (see [`Mpi::duplicate_politely`]).
    pub fn all_gather_politely(&self, comm: Comm, value: i32) -> Result<Vec<i32>, Error> {
        let size = self.size(comm)? as usize;
        let mut out = vec![0i32; size];
        let mut request = Request(std::ptr::null_mut());
        // SAFETY: one int out, `size` ints in; both buffers outlive the operation, which is
        // waited for below.
        let code = unsafe {
            (self.iallgather)(
                &value as *const i32 as *const c_void,
                1,
                self.int,
                out.as_mut_ptr() as *mut c_void,
                1,
                self.int,
                comm.0,
                &mut request.0,
            )
        };
        self.check("MPI_Iallgather", code)?;
        self.wait_politely(&mut request)?;
        Ok(out)
    }

    /// Tests `request` until it completes, sleeping in between (up to a millisecond).
    fn wait_politely(&self, request: &mut Request) -> Result<(), Error> {
        let mut pause = std::time::Duration::from_micros(20);
        while !self.test(request)? {
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(1));
        }
        Ok(())
    }

    pub fn rank(&self, comm: Comm) -> Result<i32, Error> {
        let mut v: c_int = 0;
        // SAFETY: the call writes the rank.
        self.check("MPI_Comm_rank", unsafe { (self.comm_rank)(comm.0, &mut v) })?;
        Ok(v)
    }

    pub fn size(&self, comm: Comm) -> Result<i32, Error> {
        let mut v: c_int = 0;
        // SAFETY: the call writes the size.
        self.check("MPI_Comm_size", unsafe { (self.comm_size)(comm.0, &mut v) })?;
        Ok(v)
    }

    /// The largest tag value the library accepts.
    pub fn tag_upper_bound(&self, comm: Comm) -> i32 {
        let mut value: *mut c_int = std::ptr::null_mut();
        let mut flag: c_int = 0;
        // SAFETY: for MPI_TAG_UB the attribute value is a pointer to an int owned by MPI.
        let code = unsafe {
            (self.get_attr)(
                comm.0,
                TAG_UB_KEY,
                &mut value as *mut *mut c_int as *mut c_void,
                &mut flag,
            )
        };
        if code != SUCCESS || flag == 0 || value.is_null() {
            return 32767; // the standard's guaranteed minimum
        }
        // SAFETY: MPI returned a pointer to its int.
        unsafe { *value }
    }

    /// Sends `bytes` (in chunks of at most 1 GiB, each a message with `tag`).
    pub fn send(&self, comm: Comm, bytes: &[u8], dest: i32, tag: i32) -> Result<(), Error> {
        for chunk in chunks(bytes.len()) {
            // SAFETY: the chunk lies within `bytes`.
            let code = unsafe {
                (self.send)(
                    bytes.as_ptr().add(chunk.start) as *const c_void,
                    int_count(chunk.len()),
                    self.byte,
                    dest,
                    tag,
                    comm.0,
                )
            };
            self.check("MPI_Send", code)?;
        }
        Ok(())
    }

    /// Receives exactly `buffer.len()` bytes sent by [`Mpi::send`].
    pub fn recv(&self, comm: Comm, buffer: &mut [u8], source: i32, tag: i32) -> Result<(), Error> {
        for chunk in chunks(buffer.len()) {
            let mut status = Status::default();
            // SAFETY: the chunk lies within `buffer`.
            let code = unsafe {
                (self.recv)(
                    buffer.as_mut_ptr().add(chunk.start) as *mut c_void,
                    int_count(chunk.len()),
                    self.byte,
                    source,
                    tag,
                    comm.0,
                    &mut status,
                )
            };
            self.check("MPI_Recv", code)?;
        }
        Ok(())
    }

    /// Receives one message of at most `buffer.len()` bytes (at most 1 GiB) into `buffer`;
    /// returns its length. A longer message is an error (MPI_ERR_TRUNCATE).
    pub fn recv_up_to(
        &self,
        comm: Comm,
        buffer: &mut [u8],
        source: i32,
        tag: i32,
    ) -> Result<usize, Error> {
        let mut status = Status::default();
        // SAFETY: MPI writes at most `buffer.len()` bytes (capped at one chunk) and the status.
        let code = unsafe {
            (self.recv)(
                buffer.as_mut_ptr() as *mut c_void,
                int_count(buffer.len()),
                self.byte,
                source,
                tag,
                comm.0,
                &mut status,
            )
        };
        self.check("MPI_Recv", code)?;
        Ok(status.ucount)
    }

    /// Whether a message from `source` with `tag` has arrived (without receiving it).
    pub fn has_message(&self, comm: Comm, source: i32, tag: i32) -> Result<bool, Error> {
        let mut flag: c_int = 0;
        let mut status = Status::default();
        // SAFETY: the call writes the flag and the status.
        let code = unsafe { (self.iprobe)(source, tag, comm.0, &mut flag, &mut status) };
        self.check("MPI_Iprobe", code)?;
        Ok(flag != 0)
    }

    /// Starts one non-blocking call per chunk of a `len`-byte message; `start` makes the call
    /// for a chunk and writes its request.
    fn start_chunks(
        &self,
        call: &str,
        len: usize,
        mut start: impl FnMut(std::ops::Range<usize>, &mut Handle) -> c_int,
    ) -> Result<Vec<Request>, Error> {
        let mut out = Vec::new();
        for chunk in chunks(len) {
            let mut request: Handle = std::ptr::null_mut();
            self.check(call, start(chunk, &mut request))?;
            out.push(Request(request));
        }
        Ok(out)
    }

    /// Starts sending `len` bytes at `address` (chunked as [`Mpi::send`]).
    ///
    /// # Safety
    /// The bytes stay valid and unchanged until every returned request completes.
    pub unsafe fn isend(
        &self,
        comm: Comm,
        address: *const u8,
        len: usize,
        dest: i32,
        tag: i32,
    ) -> Result<Vec<Request>, Error> {
        self.start_chunks("MPI_Isend", len, |chunk, request| {
            // SAFETY: the caller keeps the chunk valid until the request completes.
            unsafe {
                (self.isend)(
                    address.add(chunk.start) as *const c_void,
                    int_count(chunk.len()),
                    self.byte,
                    dest,
                    tag,
                    comm.0,
                    request,
                )
            }
        })
    }

    /// Starts receiving `len` bytes into `address` (chunked as [`Mpi::send`]).
    ///
    /// # Safety
    /// The bytes stay valid, and are not otherwise accessed, until every request completes.
    pub unsafe fn irecv(
        &self,
        comm: Comm,
        address: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
    ) -> Result<Vec<Request>, Error> {
        self.start_chunks("MPI_Irecv", len, |chunk, request| {
            // SAFETY: the caller keeps the chunk valid until the request completes.
            unsafe {
                (self.irecv)(
                    address.add(chunk.start) as *mut c_void,
                    int_count(chunk.len()),
                    self.byte,
                    source,
                    tag,
                    comm.0,
                    request,
                )
            }
        })
    }

    /// Waits for a request; returns the bytes it moved.
    pub fn wait(&self, mut request: Request) -> Result<usize, Error> {
        let mut status = Status::default();
        // SAFETY: the request is live; MPI sets it to MPI_REQUEST_NULL.
        let code = unsafe { (self.wait_)(&mut request.0, &mut status) };
        self.check("MPI_Wait", code)?;
        Ok(status.ucount)
    }

    /// Starts receiving a message of at most `len` bytes (one chunk, at least one byte) into
    /// `address`: [`Mpi::irecv`] for a message that fits one request.
    ///
    /// # Safety
    /// The bytes stay valid, and are not otherwise accessed, until the request completes.
    pub unsafe fn irecv_up_to(
        &self,
        comm: Comm,
        address: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
    ) -> Result<Request, Error> {
        // SAFETY: the caller's promise, for the one chunk this is.
        let mut requests = unsafe { self.irecv(comm, address, len.clamp(1, CHUNK), source, tag) }?;
        Ok(requests.pop().expect("one chunk"))
    }

    /// The bytes a receive got once it has completed (it is then freed: do not use it again).
    pub fn test_received(&self, request: &mut Request) -> Result<Option<usize>, Error> {
        let mut flag: c_int = 0;
        let mut status = Status::default();
        // SAFETY: the request is live or already null (then the flag is set).
        let code = unsafe { (self.test_)(&mut request.0, &mut flag, &mut status) };
        self.check("MPI_Test", code)?;
        Ok((flag != 0).then_some(status.ucount))
    }

    /// Whether a request has completed (and then it is freed: do not use it again).
    pub fn test(&self, request: &mut Request) -> Result<bool, Error> {
        let mut flag: c_int = 0;
        let mut status = Status::default();
        // SAFETY: the request is live or already null (then the flag is set).
        let code = unsafe { (self.test_)(&mut request.0, &mut flag, &mut status) };
        self.check("MPI_Test", code)?;
        Ok(flag != 0)
    }

    /// Makes MPI_Finalize skip its barrier over every process of the job, which would wait for
    /// ever for a process that died (under a launcher that keeps such a job). Open MPI's
    /// `async_mpi_finalize` setting, read at MPI_Init into the variable set here; false if this
    /// MPI has no such variable.
    pub fn skip_finalize_barrier(&self) -> bool {
        // SAFETY: Open MPI's `bool ompi_async_mpi_finalize` (ompi/runtime/params.h), read
        // only by MPI_Finalize; a one-byte store of true.
        match unsafe { self._library.get::<*mut u8>(b"ompi_async_mpi_finalize\0") } {
            Ok(flag) => {
                // SAFETY: as above: the symbol is the address of the variable.
                unsafe { std::ptr::write_volatile(*flag, 1) };
                true
            }
            Err(_) => false,
        }
    }

    /// Leaves a request whose peer is gone to MPI: cancelled where MPI can, never waited for.
    /// Its buffer must then stay valid for the life of the process (leak it).
    pub fn abandon(&self, mut request: Request) {
        // SAFETY: the request is live; a send MPI cannot cancel is left as it is.
        unsafe { (self.cancel)(&mut request.0) };
    }

    /// Cancels a receive that will never be matched, and completes it.
    pub fn cancel(&self, mut request: Request) {
        // SAFETY: the request is live.
        unsafe { (self.cancel)(&mut request.0) };
        let _ = self.wait(request);
    }

    /// Runs `callback` at the start of MPI_Finalize, whoever calls it, while MPI still works:
    /// the standard's hook for libraries, the delete callback of an attribute on MPI_COMM_SELF.
    pub fn on_finalize(&self, callback: DeleteAttr) -> Result<(), Error> {
        unsafe extern "C" fn no_copy(
            _: Handle,
            _: c_int,
            _: *mut c_void,
            _: *mut c_void,
            _: *mut c_void,
            flag: *mut c_int,
        ) -> c_int {
            // SAFETY: MPI passes a valid flag pointer; 0 means "do not copy the attribute".
            unsafe { *flag = 0 };
            SUCCESS
        }
        let mut keyval: c_int = 0;
        // SAFETY: both callbacks have MPI's signatures; the call writes the key.
        let code =
            unsafe { (self.create_keyval)(no_copy, callback, &mut keyval, std::ptr::null_mut()) };
        self.check("MPI_Comm_create_keyval", code)?;
        // SAFETY: the key was just created; the value is never read.
        let code = unsafe { (self.set_attr)(self.self_comm, keyval, std::ptr::null_mut()) };
        self.check("MPI_Comm_set_attr", code)
    }

    /// MPI_Finalize, unless already done.
    pub fn finalize(&self) -> Result<(), Error> {
        if self.is_finalized() {
            return Ok(());
        }
        // SAFETY: no argument; called once, after our last communication.
        self.check("MPI_Finalize", unsafe { (self.finalize)() })
    }
}

/// The byte ranges of a message of `len` bytes, one per MPI call (one empty range for 0 bytes).
fn chunks(len: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let count = len.div_ceil(CHUNK).max(1);
    (0..count).map(move |i| i * CHUNK..((i + 1) * CHUNK).min(len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_cut_into_chunks_mpi_can_count() {
        assert_eq!(chunks(0).collect::<Vec<_>>(), vec![0..0]);
        assert_eq!(chunks(5).collect::<Vec<_>>(), vec![0..5]);
        let big: Vec<_> = chunks(2 * CHUNK + 1).collect();
        assert_eq!(
            big,
            vec![0..CHUNK, CHUNK..2 * CHUNK, 2 * CHUNK..2 * CHUNK + 1]
        );
    }

    #[test]
    fn the_status_has_open_mpi_s_layout() {
        assert_eq!(std::mem::size_of::<Status>(), 24);
    }
}

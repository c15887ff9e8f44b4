//! The TCP connection under every network fetch: zot's own replacement for libgit2's plain
//! socket stream, registered once with libgit2's public `git_stream_register`
//! (`GIT_STREAM_STANDARD`). http:// and git:// talk through it directly, https:// through
//! libgit2's TLS stream wrapped around it, ssh:// through libssh2 on its descriptor.
//!
//! Why: libgit2's own socket leaves Nagle's algorithm on and never asks for quick ACKs.
//! Its HTTP client writes a request's headers and its body with separate sends, so the body
//! waits for the ACK of the headers, which the server delays 40 ms; and servers that answer
//! in two small writes (HTTP headers then body, or git's `shallow` line then the flush) wait
//! the same 40 ms for our delayed ACK. A shallow fetch pays that on each of its round trips.
//! Here every socket has `TCP_NODELAY`, and on Linux `TCP_QUICKACK` is set again each time a
//! read is about to wait (the kernel drops it by itself).
//!
//! The rest is what libgit2's stream does, in its words, so callers see the same behaviour:
//! the host and port (a number or a service name) resolved with `getaddrinfo`, each address
//! tried in turn with the connect timeout (`GIT_OPT_SET_SERVER_CONNECT_TIMEOUT`; a timeout
//! stops the tries), TCP keep-alive with libgit2's probe settings (here for IPv6 too), a
//! close-on-exec, non-blocking descriptor, reads and writes that wait at most the server
//! timeout (`GIT_OPT_SET_SERVER_TIMEOUT`) and then fail with `GIT_TIMEOUT` and "could not
//! read from socket: timed out", and errors set with `git_error_set_str` ("failed to connect
//! to HOST: Connection refused").
//!
//! ssh: libgit2's libssh2 transport does not use the stream's read and write; it casts the
//! stream to its private `git_socket_stream` (`{git_stream parent; char *host; char *port;
//! GIT_SOCKET s;}`) and hands `s` to libssh2. [`SocketStream`] therefore MIRRORS THAT
//! PRIVATE LAYOUT EXACTLY, and a unit test pins it to the libgit2-sys release in Cargo.lock
//! (Cargo.toml pins that release exactly too): a libgit2 upgrade must re-read
//! `src/libgit2/streams/socket.h` and `transports/ssh_libssh2.c` before bumping it. The
//! alternative, registering the stream only while fetching a non-ssh URL, would change a
//! process-wide setting around each fetch while `sync` fetches on several threads at once;
//! mirroring keeps one registration for the whole process and gives ssh the same socket
//! options. The ssh install tests (`tests/cli/ssh_install.rs`, a real sshd) run through it.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use libgit2_sys as raw;

/// `GIT_STREAM_VERSION` of `git2/sys/stream.h`.
const GIT_STREAM_VERSION: c_int = 1;
/// `GIT_STREAM_STANDARD` of `git_stream_t`: the plain socket (TLS wraps it).
const GIT_STREAM_STANDARD: c_int = 1;

type Stream = *mut GitStream;

/// `git_stream` of libgit2 1.9.7 (`include/git2/sys/stream.h`).
#[repr(C)]
struct GitStream {
    version: c_int,
    /// The bitfields `unsigned int encrypted : 1, proxy_support : 1`, which share one
    /// `unsigned int`. A plain socket has neither, and zero is zero whichever way the
    /// compiler orders the bits.
    flags: c_uint,
    /// Milliseconds a read or write may wait; 0 waits forever.
    timeout: c_int,
    /// Milliseconds a connect may take; 0 leaves it to the system.
    connect_timeout: c_int,
    connect: Option<unsafe extern "C" fn(Stream) -> c_int>,
    /// `int (*)(git_cert **, git_stream *)`: only for encrypted streams.
    certificate: Option<unsafe extern "C" fn(*mut *mut c_void, Stream) -> c_int>,
    /// `int (*)(git_stream *, const git_proxy_options *)`: only with `proxy_support`.
    set_proxy: Option<unsafe extern "C" fn(Stream, *const c_void) -> c_int>,
    read: Option<unsafe extern "C" fn(Stream, *mut c_void, usize) -> isize>,
    write: Option<unsafe extern "C" fn(Stream, *const c_char, usize, c_int) -> isize>,
    close: Option<unsafe extern "C" fn(Stream) -> c_int>,
    free: Option<unsafe extern "C" fn(Stream)>,
}

/// `git_stream_registration` of libgit2 1.9.7.
#[repr(C)]
struct Registration {
    version: c_int,
    init: Option<unsafe extern "C" fn(*mut Stream, *const c_char, *const c_char) -> c_int>,
    wrap: Option<unsafe extern "C" fn(*mut Stream, Stream, *const c_char) -> c_int>,
}

unsafe extern "C" {
    /// libgit2's public stream registry (not bound by libgit2-sys); it copies `registration`.
    fn git_stream_register(kind: c_int, registration: *mut Registration) -> c_int;
}

/// The stream libgit2 is given. Its layout is libgit2's private `git_socket_stream`
/// (`src/libgit2/streams/socket.h`), which the libssh2 transport casts the stream to for
/// `fd`: see the module doc before changing anything here.
#[repr(C)]
struct SocketStream {
    parent: GitStream,
    /// `char *host`, owned (`CString::into_raw`).
    host: *mut c_char,
    /// `char *port`, owned (`CString::into_raw`).
    port: *mut c_char,
    /// `GIT_SOCKET s`: the connected socket, -1 before connect and after close.
    fd: c_int,
}

/// Makes libgit2 open every plain TCP connection with [`SocketStream`]. Call once, after
/// the server timeouts are set. If libgit2 refuses, its own stream stays: slower, not wrong.
pub(super) fn register() {
    raw::init();
    let mut registration = Registration {
        version: GIT_STREAM_VERSION,
        init: Some(init),
        wrap: None,
    };
    // SAFETY: libgit2 is initialised (its registry lock exists) and copies the registration;
    // `init` matches the `init` member of `git_stream_registration`.
    unsafe {
        git_stream_register(GIT_STREAM_STANDARD, &raw mut registration);
    }
}

/// libgit2's `init`: a stream for `host` and `port`, connected later by `connect`.
unsafe extern "C" fn init(out: *mut Stream, host: *const c_char, port: *const c_char) -> c_int {
    if out.is_null() || host.is_null() || port.is_null() {
        return set_error(
            raw::GIT_ERROR_INVALID,
            "invalid argument for a socket stream",
        );
    }
    // SAFETY: libgit2 passes NUL-terminated strings that live for the call.
    let (host, port) = unsafe { (CStr::from_ptr(host), CStr::from_ptr(port)) };
    let stream = SocketStream::new(host, port, server_timeouts());
    // SAFETY: `out` is libgit2's pointer to fill; it frees the stream through `free`.
    unsafe { *out = Box::into_raw(Box::new(stream)).cast() };
    0
}

/// libgit2's connect and read/write timeouts in milliseconds, as set by
/// `GIT_OPT_SET_SERVER_CONNECT_TIMEOUT` and `GIT_OPT_SET_SERVER_TIMEOUT` (0: none).
fn server_timeouts() -> (c_int, c_int) {
    // SAFETY: reads two libgit2 globals, set once before any fetch.
    unsafe {
        (
            git2::opts::get_server_connect_timeout_in_milliseconds().unwrap_or(0),
            git2::opts::get_server_timeout_in_milliseconds().unwrap_or(0),
        )
    }
}

impl SocketStream {
    fn new(host: &CStr, port: &CStr, (connect_timeout, timeout): (c_int, c_int)) -> Self {
        SocketStream {
            parent: GitStream {
                version: GIT_STREAM_VERSION,
                flags: 0,
                timeout,
                connect_timeout,
                connect: Some(connect),
                certificate: None,
                set_proxy: None,
                read: Some(read),
                write: Some(write),
                close: Some(close),
                free: Some(free),
            },
            host: CString::from(host).into_raw(),
            port: CString::from(port).into_raw(),
            fd: -1,
        }
    }

    /// The stream behind libgit2's pointer.
    ///
    /// # Safety
    /// `stream` must come from [`init`] and not be freed; libgit2 uses a stream from one
    /// thread at a time.
    unsafe fn of<'a>(stream: Stream) -> &'a mut SocketStream {
        // SAFETY: as the caller promises; `parent` is the first member.
        unsafe { &mut *stream.cast::<SocketStream>() }
    }

    fn host(&self) -> &CStr {
        // SAFETY: `host` is the CString made in `new`, freed only in `drop`.
        unsafe { CStr::from_ptr(self.host) }
    }

    fn port(&self) -> &CStr {
        // SAFETY: as `host`.
        unsafe { CStr::from_ptr(self.port) }
    }

    fn close_socket(&mut self) {
        if self.fd >= 0 {
            // SAFETY: `fd` is the socket `connect` opened and this stream owns.
            drop(unsafe { OwnedFd::from_raw_fd(self.fd) });
            self.fd = -1;
        }
    }
}

impl Drop for SocketStream {
    fn drop(&mut self) {
        self.close_socket();
        // SAFETY: both came from `CString::into_raw` in `new` and are freed only here.
        unsafe {
            drop(CString::from_raw(self.host));
            drop(CString::from_raw(self.port));
        }
    }
}

unsafe extern "C" fn connect(stream: Stream) -> c_int {
    // SAFETY: libgit2 passes the stream `init` made.
    let stream = unsafe { SocketStream::of(stream) };
    stream.close_socket();
    match open(stream.host(), stream.port(), stream.parent.connect_timeout) {
        Ok(fd) => {
            stream.fd = fd.into_raw_fd();
            0
        }
        Err(failure) => set_error(failure.class, &failure.message),
    }
}

unsafe extern "C" fn read(stream: Stream, data: *mut c_void, len: usize) -> isize {
    // SAFETY: libgit2 passes the stream `init` made.
    let stream = unsafe { SocketStream::of(stream) };
    // SAFETY: libgit2 passes a buffer of `len` writable bytes.
    transfer(stream.fd, stream.parent.timeout, &READING, || unsafe {
        libc::recv(stream.fd, data, len, 0)
    })
}

unsafe extern "C" fn write(
    stream: Stream,
    data: *const c_char,
    len: usize,
    _flags: c_int,
) -> isize {
    // SAFETY: libgit2 passes the stream `init` made.
    let stream = unsafe { SocketStream::of(stream) };
    // SAFETY: libgit2 passes `len` readable bytes.
    transfer(stream.fd, stream.parent.timeout, &WRITING, || unsafe {
        libc::send(stream.fd, data.cast(), len, SEND_FLAGS)
    })
}

/// One direction of the socket: what a blocked call waits for, and its failures in
/// libgit2's words.
struct Way {
    events: libc::c_short,
    timed_out: &'static str,
    failed: &'static str,
}

const READING: Way = Way {
    events: libc::POLLIN,
    timed_out: "could not read from socket: timed out",
    failed: "error receiving data from socket",
};

const WRITING: Way = Way {
    events: libc::POLLOUT,
    timed_out: "could not write to socket: timed out",
    failed: "error sending data to socket",
};

/// Runs `call` (a `recv` or a `send` on `fd`) until it moves bytes or fails: an interrupted
/// call is made again, one that would block waits for the socket at most `timeout`
/// milliseconds (asking for quick ACKs first when it waits to read).
fn transfer(fd: RawFd, timeout: c_int, way: &Way, mut call: impl FnMut() -> isize) -> isize {
    loop {
        let moved = call();
        if moved >= 0 {
            return moved;
        }
        let error = io::Error::last_os_error();
        match error.kind() {
            io::ErrorKind::Interrupted => {}
            io::ErrorKind::WouldBlock => {
                if way.events == libc::POLLIN {
                    ask_for_quick_acks(fd);
                }
                match ready(fd, way.events, timeout) {
                    Ok(true) => {}
                    Ok(false) => return timed_out(way.timed_out),
                    Err(error) => return failed(way.failed, &error),
                }
            }
            _ => return failed(way.failed, &error),
        }
    }
}

unsafe extern "C" fn close(stream: Stream) -> c_int {
    // SAFETY: libgit2 passes the stream `init` made.
    unsafe { SocketStream::of(stream) }.close_socket();
    0
}

unsafe extern "C" fn free(stream: Stream) {
    // SAFETY: libgit2 frees each stream once, with the pointer `init` gave it.
    drop(unsafe { Box::from_raw(stream.cast::<SocketStream>()) });
}

/// Why a connect failed, in libgit2's words and error class.
struct Failure {
    class: raw::git_error_t,
    message: String,
}

/// A socket connected to `host`:`port`: each address `getaddrinfo` gives is tried in turn
/// until one connects; a timeout ends the tries, as in libgit2.
fn open(host: &CStr, port: &CStr, connect_timeout: c_int) -> Result<OwnedFd, Failure> {
    let name = host.to_string_lossy();
    let addresses = Addresses::resolve(host, port).map_err(|reason| Failure {
        class: raw::GIT_ERROR_NET,
        message: format!("failed to resolve address for {name}: {reason}"),
    })?;
    let mut last = io::Error::from_raw_os_error(libc::EHOSTUNREACH);
    for address in addresses.iter() {
        match connect_to(address, connect_timeout) {
            Ok(fd) => return Ok(fd),
            Err(Attempt::TimedOut) => {
                return Err(Failure {
                    class: raw::GIT_ERROR_NET,
                    message: format!("failed to connect to {name}: Operation timed out"),
                });
            }
            Err(Attempt::Failed(error)) => last = error,
        }
    }
    Err(Failure {
        class: raw::GIT_ERROR_OS,
        message: format!("failed to connect to {name}: {}", os_text(&last)),
    })
}

/// The addresses `getaddrinfo` found for a host and port (a number or a service name).
struct Addresses(*mut libc::addrinfo);

impl Addresses {
    /// Like libgit2: any family, stream sockets; the error is `gai_strerror`'s text.
    fn resolve(host: &CStr, port: &CStr) -> Result<Self, String> {
        // SAFETY: an all-zero addrinfo is the empty hints getaddrinfo expects.
        let mut hints: libc::addrinfo = unsafe { std::mem::zeroed() };
        hints.ai_family = libc::AF_UNSPEC;
        hints.ai_socktype = libc::SOCK_STREAM;
        let mut list = std::ptr::null_mut();
        // SAFETY: NUL-terminated strings, valid hints and an out pointer.
        let code = unsafe {
            libc::getaddrinfo(
                host.as_ptr(),
                port.as_ptr(),
                &raw const hints,
                &raw mut list,
            )
        };
        if code != 0 {
            // SAFETY: gai_strerror returns a static NUL-terminated message.
            let text = unsafe { CStr::from_ptr(libc::gai_strerror(code)) };
            return Err(text.to_string_lossy().into_owned());
        }
        Ok(Addresses(list))
    }

    fn iter(&self) -> impl Iterator<Item = &libc::addrinfo> {
        // SAFETY: the list getaddrinfo made lives until `drop`; each `ai_next` is in it.
        std::iter::successors(unsafe { self.0.as_ref() }, |a| unsafe {
            a.ai_next.as_ref()
        })
    }
}

impl Drop for Addresses {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the list getaddrinfo made, freed once.
            unsafe { libc::freeaddrinfo(self.0) };
        }
    }
}

/// Why connecting to one address failed.
enum Attempt {
    TimedOut,
    Failed(io::Error),
}

/// A socket connected to `address` within `timeout` milliseconds (0: the system's limit).
fn connect_to(address: &libc::addrinfo, timeout: c_int) -> Result<OwnedFd, Attempt> {
    let fd = new_socket(address.ai_family, address.ai_socktype, address.ai_protocol)
        .map_err(Attempt::Failed)?;
    set_options(&fd);
    // SAFETY: the address and its length come from getaddrinfo.
    if unsafe { libc::connect(fd.as_raw_fd(), address.ai_addr, address.ai_addrlen) } == 0 {
        return Ok(fd);
    }
    let error = io::Error::last_os_error();
    if !matches!(error.raw_os_error(), Some(libc::EINPROGRESS | libc::EINTR)) {
        return Err(Attempt::Failed(error));
    }
    match ready(fd.as_raw_fd(), libc::POLLOUT, timeout) {
        Ok(true) => {}
        Ok(false) => return Err(Attempt::TimedOut),
        Err(error) => return Err(Attempt::Failed(error)),
    }
    match int_option(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR) {
        Ok(0) => Ok(fd),
        Ok(libc::ETIMEDOUT) => Err(Attempt::TimedOut),
        Ok(code) => Err(Attempt::Failed(io::Error::from_raw_os_error(code))),
        Err(error) => Err(Attempt::Failed(error)),
    }
}

/// A non-blocking, close-on-exec socket.
#[cfg(target_os = "linux")]
fn new_socket(family: c_int, kind: c_int, protocol: c_int) -> io::Result<OwnedFd> {
    let kind = kind | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: plain arguments; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::socket(family, kind, protocol) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A non-blocking, close-on-exec socket (flags set after `socket`, which lacks them here).
#[cfg(not(target_os = "linux"))]
fn new_socket(family: c_int, kind: c_int, protocol: c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain arguments; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::socket(family, kind, protocol) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened, owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let raw_fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(raw_fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0
        || unsafe { libc::fcntl(raw_fd, libc::F_SETFD, libc::FD_CLOEXEC) } < 0
        || unsafe { libc::fcntl(raw_fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
    {
        return Err(io::Error::last_os_error());
    }
    #[cfg(target_vendor = "apple")]
    let _ = set_int_option(raw_fd, libc::SOL_SOCKET, libc::SO_NOSIGPIPE, 1);
    Ok(fd)
}

/// `send` flags: a peer that went away is an error (`EPIPE`), not a SIGPIPE (elsewhere the
/// socket has `SO_NOSIGPIPE`).
#[cfg(target_os = "linux")]
const SEND_FLAGS: c_int = libc::MSG_NOSIGNAL;
#[cfg(not(target_os = "linux"))]
const SEND_FLAGS: c_int = 0;

/// No Nagle, and libgit2's keep-alive: probes after 60 s idle, every 10 s, 3 of them.
/// Failures are ignored, as libgit2 ignores them: the connection works without.
fn set_options(fd: &OwnedFd) {
    let fd = fd.as_raw_fd();
    let _ = set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
    if set_int_option(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1).is_ok() {
        #[cfg(target_os = "linux")]
        for (option, value) in [
            (libc::TCP_KEEPIDLE, 60),
            (libc::TCP_KEEPINTVL, 10),
            (libc::TCP_KEEPCNT, 3),
        ] {
            let _ = set_int_option(fd, libc::IPPROTO_TCP, option, value);
        }
        #[cfg(target_vendor = "apple")]
        let _ = set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_KEEPALIVE, 60);
    }
}

/// Linux: ACK at once rather than up to 40 ms later. Setting `TCP_QUICKACK` sends an ACK the
/// kernel is holding back and leaves the delayed-ACK mode that sending put the connection
/// in; the kernel goes back to it by itself, so this is asked for each time a read is about
/// to wait, which is when a held-back ACK can stall the server. (Before every read instead,
/// it cost one more system call per read for the same round-trip times.)
fn ask_for_quick_acks(fd: RawFd) {
    #[cfg(target_os = "linux")]
    let _ = set_int_option(fd, libc::IPPROTO_TCP, libc::TCP_QUICKACK, 1);
    #[cfg(not(target_os = "linux"))]
    let _ = fd;
}

fn set_int_option(fd: RawFd, level: c_int, option: c_int, value: c_int) -> io::Result<()> {
    let size = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: an int option with its size.
    let done = unsafe { libc::setsockopt(fd, level, option, (&raw const value).cast(), size) };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn int_option(fd: RawFd, level: c_int, option: c_int) -> io::Result<c_int> {
    let mut value: c_int = 0;
    let mut size = std::mem::size_of::<c_int>() as libc::socklen_t;
    // SAFETY: an int option with its size.
    let done =
        unsafe { libc::getsockopt(fd, level, option, (&raw mut value).cast(), &raw mut size) };
    if done == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether `fd` became ready for `events` within `timeout` milliseconds (0: no limit);
/// a signal does not cut the wait short.
fn ready(fd: RawFd, events: libc::c_short, timeout: c_int) -> io::Result<bool> {
    let deadline = u64::try_from(timeout)
        .ok()
        .filter(|&ms| ms > 0)
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    loop {
        let wait = match deadline {
            None => -1,
            Some(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                c_int::try_from(left.as_micros().div_ceil(1000)).unwrap_or(c_int::MAX)
            }
        };
        let mut poll = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // SAFETY: one pollfd, counted as one.
        match unsafe { libc::poll(&raw mut poll, 1, wait) } {
            0 => return Ok(false),
            n if n > 0 => return Ok(true),
            _ => {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
}

/// An OS error as `strerror` words it ("Connection refused"), as libgit2 prints it.
fn os_text(error: &io::Error) -> String {
    let text = error.to_string();
    match error.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .unwrap_or(&text)
            .to_string(),
        None => text,
    }
}

/// Sets libgit2's error for the calling thread; returns libgit2's generic failure (-1).
fn set_error(class: raw::git_error_t, message: &str) -> c_int {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: a NUL-terminated message, copied by libgit2.
    unsafe { raw::git_error_set_str(c_int::try_from(class).unwrap_or(0), message.as_ptr()) };
    -1
}

fn timed_out(message: &str) -> isize {
    set_error(raw::GIT_ERROR_NET, message);
    raw::GIT_TIMEOUT as isize
}

fn failed(what: &str, error: &io::Error) -> isize {
    set_error(raw::GIT_ERROR_NET, &format!("{what}: {}", os_text(error))) as isize
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::mem::{offset_of, size_of};
    use std::net::TcpListener;

    /// The libgit2-sys release whose private `git_socket_stream` [`SocketStream`] mirrors.
    const MIRRORED_LIBGIT2_SYS: &str = "0.18.8+1.9.7";

    #[test]
    fn the_stream_mirrors_libgit2s_private_socket_stream_of_the_locked_release() {
        let lock = include_str!("../../../Cargo.lock");
        let locked = lock
            .split("[[package]]")
            .find(|p| p.contains("name = \"libgit2-sys\""))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .map(|v| v.trim_matches('"'));
        assert_eq!(
            locked,
            Some(MIRRORED_LIBGIT2_SYS),
            "libgit2-sys changed: check SocketStream against src/libgit2/streams/socket.h and \
             transports/ssh_libssh2.c of the new libgit2, then update this test"
        );
        // git_stream: 4 ints, then 7 function pointers.
        let pointer = size_of::<*const c_void>();
        assert_eq!(offset_of!(GitStream, flags), 4);
        assert_eq!(offset_of!(GitStream, timeout), 8);
        assert_eq!(offset_of!(GitStream, connect_timeout), 12);
        assert_eq!(offset_of!(GitStream, connect), 16);
        assert_eq!(offset_of!(GitStream, free), 16 + 6 * pointer);
        assert_eq!(size_of::<GitStream>(), 16 + 7 * pointer);
        // git_socket_stream: the parent, host, port, then the socket.
        assert_eq!(offset_of!(SocketStream, parent), 0);
        assert_eq!(offset_of!(SocketStream, host), size_of::<GitStream>());
        assert_eq!(
            offset_of!(SocketStream, port),
            size_of::<GitStream>() + pointer
        );
        assert_eq!(
            offset_of!(SocketStream, fd),
            size_of::<GitStream>() + 2 * pointer
        );
        assert_eq!(offset_of!(Registration, init), pointer);
    }

    /// A stream connected to `port` on 127.0.0.1 through the callbacks libgit2 calls, with
    /// `timeout` milliseconds for reads and writes.
    fn connected(port: u16, timeout: c_int) -> Stream {
        let port = CString::new(port.to_string()).unwrap();
        let mut stream: Stream = std::ptr::null_mut();
        // SAFETY: as libgit2 calls them.
        unsafe {
            assert_eq!(
                init(&raw mut stream, c"127.0.0.1".as_ptr(), port.as_ptr()),
                0
            );
            (*stream).timeout = timeout;
            assert_eq!(connect(stream), 0, "{}", last_error());
        }
        stream
    }

    fn fd_of(stream: Stream) -> RawFd {
        // SAFETY: a live stream from `connected`.
        unsafe { SocketStream::of(stream) }.fd
    }

    fn last_error() -> String {
        git2::Error::last_error(-1).message().to_string()
    }

    fn finish(stream: Stream) {
        // SAFETY: a live stream from `connected`, closed and freed once.
        unsafe {
            assert_eq!(close(stream), 0);
            free(stream);
        }
    }

    #[test]
    fn a_connected_socket_has_no_nagle_keeps_alive_and_closes_on_exec() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = connected(listener.local_addr().unwrap().port(), 1000);
        let fd = fd_of(stream);
        assert_eq!(
            int_option(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY).unwrap(),
            1
        );
        assert_eq!(
            int_option(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE).unwrap(),
            1
        );
        #[cfg(target_os = "linux")]
        assert_eq!(
            int_option(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE).unwrap(),
            60
        );
        // SAFETY: fcntl on an open descriptor.
        let descriptor_flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert_ne!(descriptor_flags & libc::FD_CLOEXEC, 0);
        finish(stream);
    }

    #[test]
    fn bytes_go_both_ways_and_the_end_reads_as_zero() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = connected(listener.local_addr().unwrap().port(), 20_000);
        let server = std::thread::spawn(move || {
            let (mut peer, _) = listener.accept().unwrap();
            let mut asked = [0u8; 4];
            peer.read_exact(&mut asked).unwrap();
            peer.write_all(b"pong").unwrap();
            asked
        });
        let mut answer = [0u8; 8];
        // SAFETY: a live stream and buffers of the lengths given.
        unsafe {
            assert_eq!(write(stream, c"ping".as_ptr(), 4, 0), 4);
            assert_eq!(read(stream, answer.as_mut_ptr().cast(), answer.len()), 4);
        }
        assert_eq!(&answer[..4], b"pong");
        assert_eq!(&server.join().unwrap(), b"ping");
        // SAFETY: as above.
        assert_eq!(
            unsafe { read(stream, answer.as_mut_ptr().cast(), answer.len()) },
            0
        );
        finish(stream);
    }

    #[test]
    fn a_silent_server_times_out_a_read_in_libgit2s_words() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = connected(listener.local_addr().unwrap().port(), 200);
        let mut buffer = [0u8; 16];
        // SAFETY: a live stream and a buffer of the length given.
        let got = unsafe { read(stream, buffer.as_mut_ptr().cast(), buffer.len()) };
        assert_eq!(got, raw::GIT_TIMEOUT as isize);
        assert_eq!(last_error(), "could not read from socket: timed out");
        finish(stream);
        drop(listener);
    }

    #[test]
    fn a_server_that_stops_reading_times_out_a_write() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let stream = connected(listener.local_addr().unwrap().port(), 200);
        let chunk = vec![b'x'; 1 << 20];
        // The socket buffers on both sides fill after a few megabytes.
        let sent = (0..256).find_map(|_| {
            // SAFETY: a live stream and `chunk.len()` readable bytes.
            let sent = unsafe { write(stream, chunk.as_ptr().cast(), chunk.len(), 0) };
            (sent < 0).then_some(sent)
        });
        assert_eq!(sent, Some(raw::GIT_TIMEOUT as isize));
        assert_eq!(last_error(), "could not write to socket: timed out");
        finish(stream);
        drop(listener);
    }

    #[test]
    fn a_refused_connection_and_an_unknown_service_say_so_as_libgit2_does() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let port = CString::new(port.to_string()).unwrap();
        for (port, expected) in [
            (port.as_c_str(), "failed to connect to 127.0.0.1: "),
            (
                c"no-such-service",
                "failed to resolve address for 127.0.0.1: ",
            ),
        ] {
            let mut stream: Stream = std::ptr::null_mut();
            // SAFETY: as libgit2 calls them; the stream is freed once.
            unsafe {
                assert_eq!(
                    init(&raw mut stream, c"127.0.0.1".as_ptr(), port.as_ptr()),
                    0
                );
                assert_eq!(connect(stream), -1);
                free(stream);
            }
            let message = last_error();
            assert!(message.starts_with(expected), "{message}");
            assert!(!message.contains("os error"), "{message}");
        }
    }

    /// The descriptor in this process whose local address is `address` (IPv4).
    fn socket_bound_to(address: std::net::SocketAddr) -> Option<RawFd> {
        let std::net::SocketAddr::V4(address) = address else {
            return None;
        };
        (0..4096).find(|&fd| {
            // SAFETY: getsockname on any descriptor number fills at most `size` bytes.
            let mut name: libc::sockaddr_in = unsafe { std::mem::zeroed() };
            let mut size = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let found = unsafe { libc::getsockname(fd, (&raw mut name).cast(), &raw mut size) };
            found == 0
                && c_int::from(name.sin_family) == libc::AF_INET
                && u16::from_be(name.sin_port) == address.port()
                && name.sin_addr.s_addr == u32::from(*address.ip()).to_be()
        })
    }

    #[test]
    fn libgit2_connects_through_the_registered_stream() {
        register();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "git://127.0.0.1:{}/x.git",
            listener.local_addr().unwrap().port()
        );
        let server = std::thread::spawn(move || {
            let (peer, client) = listener.accept().unwrap();
            let nodelay = socket_bound_to(client)
                .map(|fd| int_option(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY));
            drop(peer);
            nodelay
        });
        let mut remote = git2::Remote::create_detached(url).unwrap();
        // The server hangs up without a word: the connection fails after it was looked at.
        assert!(remote.connect(git2::Direction::Fetch).is_err());
        let nodelay = server.join().unwrap().expect("the client's socket");
        assert_eq!(
            nodelay.unwrap(),
            1,
            "libgit2 used a socket without TCP_NODELAY"
        );
    }
}

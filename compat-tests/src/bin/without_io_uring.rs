//! `without_io_uring PROGRAM ARGS...`: runs PROGRAM where io_uring does not exist, as under
//! a container runtime's seccomp profile or on an old kernel: a seccomp filter makes
//! `io_uring_setup` fail with ENOSYS, then PROGRAM is exec'd. Tests use it to show that
//! `samsa --io-engine=auto` falls back to epoll with one clear log line.

use std::ffi::CString;

/// `io_uring_setup`'s number in the generic syscall table (the same on x86_64 and arm64).
const SYS_IO_URING_SETUP: u32 = 425;

fn main() {
    let args: Vec<CString> = std::env::args()
        .skip(1)
        .map(|a| CString::new(a).expect("argument without NUL"))
        .collect();
    assert!(!args.is_empty(), "usage: without_io_uring PROGRAM ARGS...");
    // Load the syscall number; io_uring_setup -> ERRNO(ENOSYS); everything else -> ALLOW.
    let filter = [
        bpf_stmt(0x20, 0),                        // BPF_LD|BPF_W|BPF_ABS, seccomp_data.nr
        bpf_jump(0x15, SYS_IO_URING_SETUP, 0, 1), // BPF_JMP|BPF_JEQ|BPF_K
        bpf_stmt(0x06, 0x0005_0000 | libc::ENOSYS as u32), // BPF_RET|BPF_K, SECCOMP_RET_ERRNO
        bpf_stmt(0x06, 0x7fff_0000),              // BPF_RET|BPF_K, SECCOMP_RET_ALLOW
    ];
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: plain prctl calls with a filter program that outlives them; exec replaces us.
    unsafe {
        assert_eq!(
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
            0,
            "PR_SET_NO_NEW_PRIVS"
        );
        assert_eq!(
            libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog
            ),
            0,
            "PR_SET_SECCOMP: {}",
            std::io::Error::last_os_error()
        );
        let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        argv.push(std::ptr::null());
        libc::execvp(args[0].as_ptr(), argv.as_ptr());
    }
    panic!(
        "cannot exec {:?}: {}",
        args[0],
        std::io::Error::last_os_error()
    );
}

fn bpf_stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn bpf_jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

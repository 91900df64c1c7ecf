// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_TEST_COMMON_FORK_GATE_HPP
#define COROLOCK_TEST_COMMON_FORK_GATE_HPP

#include <cstdlib>
#include <unistd.h>

namespace corolock::test {

// Children are forked before the parent starts any thread (ThreadSanitizer cannot start threads
// in the child of a multi-threaded process); each waits at the gate until the parent, ready,
// opens it. A pipe: the parent writes one byte per child.
struct fork_gate {
    int fd[2] = {-1, -1};
    fork_gate() {
        if (::pipe(fd) != 0)
            std::abort();
    }
    ~fork_gate() {
        ::close(fd[0]);
        ::close(fd[1]);
    }
    fork_gate(const fork_gate&) = delete;
    fork_gate& operator=(const fork_gate&) = delete;
    // In the parent: lets `children` children through. False if the pipe failed.
    bool open(int children) {
        for (int i = 0; i < children; ++i)
            if (::write(fd[1], "g", 1) != 1)
                return false;
        return true;
    }
    // In a child: blocks until let through; exits with status 2 if the parent is gone.
    void wait() {
        char c = 0;
        if (::read(fd[0], &c, 1) != 1)
            ::_exit(2);
    }
};

} // namespace corolock::test

#endif // COROLOCK_TEST_COMMON_FORK_GATE_HPP

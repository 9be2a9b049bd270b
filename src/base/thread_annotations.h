// Clang's thread-safety annotations (-Wthread-safety), as macros that are
// empty for other compilers. Members say which mutex guards them
// (GUARDED_BY), functions which mutex their caller must hold (REQUIRES) or
// must not hold (EXCLUDES). GCC builds ignore them; the CTest test
// `thread_safety_annotations` (tests/layering/) checks them with clang
// against libc++, whose std::mutex, std::shared_mutex and std::lock_guard
// carry the matching capability attributes
// (_LIBCPP_ENABLE_THREAD_SAFETY_ANNOTATIONS), so the code keeps using the
// standard types. std::unique_lock is not annotated there: code that needs
// one (for a condition variable, or to unlock in the middle) uses
// `base::UniqueLock`, which is.
//
// No threads, no state of its own. Any layer but src/core may include it.
#pragma once

#include <mutex>

#if defined(__clang__)
#define ARTEL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define ARTEL_THREAD_ANNOTATION(x)
#endif

#define GUARDED_BY(x) ARTEL_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) ARTEL_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) ARTEL_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) ARTEL_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) ARTEL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) ARTEL_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) ARTEL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) ARTEL_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS ARTEL_THREAD_ANNOTATION(no_thread_safety_analysis)
#define SCOPED_CAPABILITY ARTEL_THREAD_ANNOTATION(scoped_lockable)
#define ACQUIRE(...) ARTEL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) ARTEL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

namespace artel::base {

// std::unique_lock<std::mutex> that the analysis follows: held from
// construction, released and taken again by unlock()/lock(), released at
// destruction if held. `get()` is for std::condition_variable::wait, which
// gives the mutex up and takes it back before it returns.
class SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(std::mutex& mu) ACQUIRE(mu) : lock_(mu) {}
  ~UniqueLock() RELEASE() {}
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;
  void lock() ACQUIRE() { lock_.lock(); }
  void unlock() RELEASE() { lock_.unlock(); }
  std::unique_lock<std::mutex>& get() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace artel::base

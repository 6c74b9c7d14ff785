; autosched native runtime: a persistent thread pool and a timing loop.
;
; Why LLVM IR and not Python or C: kernels run their parallel loops through
; @autosched_parallel_for and the tuner times them through @autosched_time, so neither
; may touch Python (no GIL, no interpreter overhead inside the measured region), and
; users need no C compiler: llvmlite JIT-compiles this file (compiler/runtime/native.py),
; and the same text can be linked into an exported shared library next to kernels.
;
; Portable except for: Linux x86-64 syscall numbers (SYS_futex = 202,
; SYS_sched_getaffinity = 204), the x86 `pause`, `clflush`, `clflushopt` and
; `mfence` instructions, and glibc's __register_atfork (pthread_atfork itself is a static stub in
; libc_nonshared.a, so it cannot be resolved by a JIT).  Needs only libc symbols:
; pthread_create, syscall, sched_yield, clock_gettime, nanosleep, __register_atfork.
;
; Every definition has external linkage and default visibility, so several shared
; libraries may each carry a copy: the dynamic linker binds them all to the first one
; loaded with RTLD_GLOBAL, otherwise each library keeps its own pool; both are correct
; because the copies are identical.  A library holding this code must never be
; dlclose'd while its workers exist (ctypes never unloads).
;
; Function types used below:
;   task   : i32 (i32 task_id, i32 num_tasks, ptr closure)   nonzero return = error
;   kernel : i32 (ptr args)                                  nonzero return = error


; ---------------------------------------------------------------------------------------
; Pool state.  Launches are serialised by @autosched_pool_busy, so only the thread that
; holds it writes the job fields; workers read them after an acquire of their own state
; word (below), which the launcher set (release) after writing them.

; Pause iterations an idle worker spins before it sleeps on the futex.  A `pause` takes
; about 20 ns on current Intel and AMD cores (140 cycles on Skylake and later, fewer on
; older ones), so 5000 is on the order of 100 us: long enough that back-to-back
; launches (a timing loop) never pay a futex wake, short enough that an idle pool stops
; using CPU almost at once.  Tests and benchmarks may change it.
; A launch with more threads than the process has CPUs does not spin at all: a worker
; spinning after its tasks would hold a core that a worker still running tasks (or the
; caller) is waiting for; measured on 2 CPUs, launches of 2 to 7 threads took 370 us
; on average with spinning and 40 us without.
@autosched_spin_count = global i32 5000, align 4

; How many threads a kernel's parallel loop may use, asked at each launch: null (the
; JIT-compiled runtime of a Python process) leaves the count the kernels were compiled
; with; a model library (runtime/model_api.c) points it at a function that returns the
; count its calling instance was given (autosched_set_num_threads), 0 for the compiled
; one.  A function and not a thread-local variable because MCJIT cannot allocate
; thread-local storage, and this file is JIT-compiled too.
@autosched_threads_hook = global ptr null, align 8

; CPUs this process may run on (sched_getaffinity), counted when the pool is created.
@autosched_pool_cpus = global i32 0, align 4

; 1 while a launch owns the pool.  Taken with cmpxchg; a call that finds it taken (a
; nested call from inside a task, or a concurrent call from another thread) runs its
; tasks serially in the caller instead of waiting, so it can never deadlock.
@autosched_pool_busy = global i32 0, align 64

; Number of worker threads created so far (ids 1..size; the caller is id 0).
@autosched_pool_size = global i32 0, align 4

; Workers of the current launch that have not finished their tasks yet.
@autosched_pool_pending = global i32 0, align 64

; A nonzero task return code of the current launch (any one of them), else 0.
@autosched_pool_error = global i32 0, align 4

; The current job: task function, closure, task count, how many threads share it, how
; they share it, and how long its workers spin afterwards (0 when the job has more
; threads than CPUs).  A static job (autosched_parallel_for) gives thread k the tasks
; k, k + threads, k + 2*threads, ...; a dynamic one (autosched_parallel_for_dynamic)
; gives thread k a contiguous range of the tasks, the k-th of `threads` equal ranges,
; which it claims one task at a time from its own counter in
; @autosched_pool_job_claims; once its range is used up it claims from the other
; threads' ranges, so a thread whose core runs faster (another process shares the other
; core, or turbo differs) takes more of them.  Why ranges and not one shared counter:
; with the same range for the same thread in every kernel, a layer's thread reads the
; part of its input that the same thread (core) wrote in the layer before, from its own
; cache, where a shared counter hands the parts out at random and about half of every
; input crosses to the other core's cache: measured on 2 cores of a Zen 5 VM, in one
; process, alternating, MobileNetV2 2.83 -> 2.49 ms and ResNet-18 7.21 -> 6.69 ms
; with ranges instead of one counter (and 2.59 / 6.73 ms with a static half each).
@autosched_pool_job_fn = global ptr null, align 8
@autosched_pool_job_closure = global ptr null, align 8
@autosched_pool_job_tasks = global i32 0, align 4
@autosched_pool_job_threads = global i32 0, align 4
@autosched_pool_job_spins = global i32 0, align 4
@autosched_pool_job_dynamic = global i32 0, align 4

; The next task to be claimed of each thread's range of a dynamic job, each counter on
; a cache line of its own (every claim writes it).  Counted in i64: claims pass the end
; of a range by up to one per thread.
@autosched_pool_job_claims = global [256 x [8 x i64]] zeroinitializer, align 64

; One state word per worker id, each on its own 64-byte cache line; it is also the
; futex the worker sleeps on.
;   0 IDLE   awake, no work: the worker spins reading it
;   1 WORK   set by the launcher (release) when the worker takes part in a launch;
;            the worker sets it back to IDLE when its tasks are done
;   2 ASLEEP set by the worker (cmpxchg IDLE -> ASLEEP) before FUTEX_WAIT
; The launcher swaps in WORK and makes the wake syscall only if the old value was
; ASLEEP.  Both sides change the word with read-modify-writes, which are totally
; ordered on one address, so either the worker's cmpxchg sees WORK (and does not sleep)
; or the launcher's swap sees ASLEEP (and wakes it); FUTEX_WAIT itself re-checks the
; word under the futex lock, so a wake between the cmpxchg and the wait is not lost.
; Why per worker and not one shared generation word with a sleepers count: a shared
; futex can only be woken all at once, so a launch using fewer threads than the pool
; holds would wake every idle worker on every launch (measured 4x slower launches with
; one idle worker beyond the launch's); here idle workers outside the launch sleep on.
; Why a word per worker rather than "run if your id < threads": a worker slow to notice
; one launch can never read the job of the next one and run it twice.
@autosched_pool_state = global [256 x [16 x i32]] zeroinitializer, align 64

; 1 once the fork handler is registered and the CPUs counted (both survive fork, so
; this is never reset).
@autosched_pool_initialized = global i32 0, align 4


declare i32 @pthread_create(ptr, ptr, ptr, ptr)
declare i64 @syscall(i64, ...)
declare i32 @sched_yield()
declare i32 @clock_gettime(i32, ptr)
declare i32 @nanosleep(ptr, ptr)
declare i32 @__register_atfork(ptr, ptr, ptr, ptr)
declare void @llvm.x86.sse2.pause()
declare void @llvm.x86.sse2.clflush(ptr)
declare void @llvm.x86.sse2.mfence()
declare i64 @llvm.ctpop.i64(i64)
declare i32 @llvm.smin.i32(i32, i32)
declare i32 @llvm.smax.i32(i32, i32)
declare i64 @llvm.smin.i64(i64, i64)
declare i64 @llvm.smax.i64(i64, i64)
declare double @llvm.ceil.f64(double)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)


; ---------------------------------------------------------------------------------------
; Run tasks first, first + stride, ... below num_tasks.  Every task runs even after one
; fails, so the serial and the parallel paths run the same set of tasks; returns the
; first nonzero code seen, else 0.
define internal i32 @autosched_run_share(i32 %first, i32 %stride, ptr %fn, ptr %closure,
                                         i32 %num_tasks) {
entry:
  ; Counted in i64 so that t + stride cannot overflow near INT32_MAX tasks.
  %first64 = sext i32 %first to i64
  %stride64 = sext i32 %stride to i64
  %tasks64 = sext i32 %num_tasks to i64
  br label %head

head:
  %t = phi i64 [ %first64, %entry ], [ %t.next, %body ]
  %rc = phi i32 [ 0, %entry ], [ %rc.next, %body ]
  %more = icmp slt i64 %t, %tasks64
  br i1 %more, label %body, label %done

body:
  %t32 = trunc i64 %t to i32
  %r = call i32 %fn(i32 %t32, i32 %num_tasks, ptr %closure)
  %had = icmp ne i32 %rc, 0
  %rc.next = select i1 %had, i32 %rc, i32 %r
  %t.next = add nsw i64 %t, %stride64
  br label %head

done:
  ret i32 %rc
}


; ---------------------------------------------------------------------------------------
; The first task of range %k of %threads equal ranges of %tasks tasks.
define internal i64 @autosched_range_start(i64 %k, i64 %threads, i64 %tasks) {
entry:
  %p = mul nsw i64 %k, %tasks
  %q = sdiv i64 %p, %threads
  ret i64 %q
}


; Claim tasks of the current dynamic job one at a time and run them: first from thread
; %id's own range, then from the ranges of threads %id + 1, %id + 2, ... (mod %threads),
; until none is left.  Like run_share, every task runs even after one fails; returns the
; first nonzero code seen, else 0.
define internal i32 @autosched_run_claimed(i32 %id, i32 %threads, ptr %fn, ptr %closure,
                                           i32 %num_tasks) {
entry:
  %tasks64 = sext i32 %num_tasks to i64
  %threads64 = sext i32 %threads to i64
  %id64 = sext i32 %id to i64
  br label %range

range:
  %j = phi i64 [ 0, %entry ], [ %j.next, %range.done ]
  %rc = phi i32 [ 0, %entry ], [ %rc.range, %range.done ]
  %ranges.left = icmp slt i64 %j, %threads64
  br i1 %ranges.left, label %range.pick, label %done

range.pick:
  %v.sum = add nsw i64 %id64, %j
  %v = srem i64 %v.sum, %threads64
  %v.next = add nsw i64 %v, 1
  %end = call i64 @autosched_range_start(i64 %v.next, i64 %threads64, i64 %tasks64)
  %counter = getelementptr inbounds [256 x [8 x i64]], ptr @autosched_pool_job_claims,
                                    i64 0, i64 %v, i64 0
  br label %claim

claim:
  %rc.claim = phi i32 [ %rc, %range.pick ], [ %rc.next, %body ]
  %t = atomicrmw add ptr %counter, i64 1 monotonic, align 8
  %more = icmp slt i64 %t, %end
  br i1 %more, label %body, label %range.done

body:
  %t32 = trunc i64 %t to i32
  %r = call i32 %fn(i32 %t32, i32 %num_tasks, ptr %closure)
  %had = icmp ne i32 %rc.claim, 0
  %rc.next = select i1 %had, i32 %rc.claim, i32 %r
  br label %claim

range.done:
  %rc.range = phi i32 [ %rc.claim, %claim ]
  %j.next = add nsw i64 %j, 1
  br label %range

done:
  ret i32 %rc
}


; Run this thread's part of the current job: thread %id of %threads.
define internal i32 @autosched_run_part(i32 %id, i32 %threads, ptr %fn, ptr %closure,
                                        i32 %num_tasks, i32 %dynamic) {
entry:
  %is.dynamic = icmp ne i32 %dynamic, 0
  br i1 %is.dynamic, label %claimed, label %shared

claimed:
  %rc = call i32 @autosched_run_claimed(i32 %id, i32 %threads, ptr %fn, ptr %closure,
                                        i32 %num_tasks)
  ret i32 %rc

shared:
  %rs = call i32 @autosched_run_share(i32 %id, i32 %threads, ptr %fn, ptr %closure,
                                      i32 %num_tasks)
  ret i32 %rs
}


; ---------------------------------------------------------------------------------------
; Worker thread body; %arg is the worker id (1..255) cast to a pointer.  Never returns.
define internal ptr @autosched_worker_main(ptr %arg) {
entry:
  %id = ptrtoint ptr %arg to i64
  %id32 = trunc i64 %id to i32
  %state = getelementptr inbounds [256 x [16 x i32]], ptr @autosched_pool_state,
                                  i64 0, i64 %id, i64 0
  %spins0 = load atomic i32, ptr @autosched_spin_count monotonic, align 4
  br label %idle

; Spin phase: poll our state word with `pause` so a launch soon after the last one is
; picked up in well under a microsecond, without any syscall on either side.
idle:
  %spins = phi i32 [ %spins0, %entry ], [ %job.spins, %work.done ]
  br label %spin

spin:
  %i = phi i32 [ 0, %idle ], [ %i.next, %spin.pause ]
  %s = load atomic i32, ptr %state acquire, align 4
  %has = icmp eq i32 %s, 1
  br i1 %has, label %work, label %spin.check

spin.check:
  %again = icmp slt i32 %i, %spins
  br i1 %again, label %spin.pause, label %sleep

spin.pause:
  call void @llvm.x86.sse2.pause()
  %i.next = add nuw nsw i32 %i, 1
  br label %spin

; Sleep phase: announce ASLEEP, unless a launch has just set WORK (then the cmpxchg
; fails and its acquire makes the job fields visible).
sleep:
  %cx = cmpxchg ptr %state, i32 0, i32 2 acquire acquire, align 4
  %asleep = extractvalue { i32, i1 } %cx, 1
  br i1 %asleep, label %sleep.wait, label %work

sleep.wait:
  ; syscall(SYS_futex, state, FUTEX_WAIT_PRIVATE, ASLEEP, NULL): returns when woken,
  ; at once if the word is no longer ASLEEP, or early on a signal (then wait again).
  %fw = call i64 (i64, ...) @syscall(i64 202, ptr %state, i64 128, i64 2, ptr null)
  %s2 = load atomic i32, ptr %state acquire, align 4
  %woken = icmp eq i32 %s2, 1
  br i1 %woken, label %work, label %sleep.wait

work:
  %fn = load ptr, ptr @autosched_pool_job_fn, align 8
  %closure = load ptr, ptr @autosched_pool_job_closure, align 8
  %tasks = load i32, ptr @autosched_pool_job_tasks, align 4
  %threads = load i32, ptr @autosched_pool_job_threads, align 4
  %job.spins = load i32, ptr @autosched_pool_job_spins, align 4
  %dynamic = load i32, ptr @autosched_pool_job_dynamic, align 4
  %rc = call i32 @autosched_run_part(i32 %id32, i32 %threads, ptr %fn, ptr %closure,
                                     i32 %tasks, i32 %dynamic)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %work.fail, label %work.done

work.fail:
  store atomic i32 %rc, ptr @autosched_pool_error monotonic, align 4
  br label %work.done

work.done:
  ; Back to IDLE before reporting done, so the launcher's next WORK cannot be
  ; overwritten; the release on pending publishes the error store and our task writes.
  store atomic i32 0, ptr %state monotonic, align 4
  %p.old = atomicrmw sub ptr @autosched_pool_pending, i32 1 release, align 4
  br label %idle
}


; ---------------------------------------------------------------------------------------
; fork() copies the pool state but not the worker threads: the child forgets the pool
; (it grows a new one on its next launch) instead of waiting forever on workers that
; do not exist.  Registered with glibc's __register_atfork (no dso handle: this code is
; never unloaded).
define internal void @autosched_pool_after_fork_child() {
entry:
  store i32 0, ptr @autosched_pool_size, align 4
  store i32 0, ptr @autosched_pool_busy, align 4
  store i32 0, ptr @autosched_pool_pending, align 4
  call void @llvm.memset.p0.i64(ptr align 64 @autosched_pool_state, i8 0,
                                i64 16384, i1 false)
  ret void
}


; CPUs in this thread's affinity mask: syscall(SYS_sched_getaffinity, 0, 128, mask)
; fills a 1024-bit mask and returns the bytes written.  Unknown (an error) counts as
; 1024, so that nothing is throttled.
define internal i32 @autosched_count_cpus() {
entry:
  %mask = alloca [16 x i64], align 8
  call void @llvm.memset.p0.i64(ptr align 8 %mask, i8 0, i64 128, i1 false)
  %bytes = call i64 (i64, ...) @syscall(i64 204, i64 0, i64 128, ptr %mask)
  %failed = icmp sle i64 %bytes, 0
  br i1 %failed, label %unknown, label %head

head:
  %i = phi i64 [ 0, %entry ], [ %i.next, %head ]
  %sum = phi i64 [ 0, %entry ], [ %sum.next, %head ]
  %word.p = getelementptr inbounds [16 x i64], ptr %mask, i64 0, i64 %i
  %word = load i64, ptr %word.p, align 8
  %bits = call i64 @llvm.ctpop.i64(i64 %word)
  %sum.next = add nuw nsw i64 %sum, %bits
  %i.next = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %i.next, 16
  br i1 %more, label %head, label %done

done:
  %n = trunc i64 %sum.next to i32
  %n.pos = call i32 @llvm.smax.i32(i32 %n, i32 1)
  ret i32 %n.pos

unknown:
  ret i32 1024
}


; Create workers until there are %want of them (called with the pool held).  Returns
; the pool size reached; it stays smaller if pthread_create fails, and the launch then
; shares its tasks among the workers that exist.
define internal i32 @autosched_pool_grow(i32 %want) {
entry:
  %tid = alloca i64, align 8
  %size0 = load atomic i32, ptr @autosched_pool_size monotonic, align 4
  %enough0 = icmp sge i32 %size0, %want
  br i1 %enough0, label %done, label %first

first:
  %initialized = load i32, ptr @autosched_pool_initialized, align 4
  %need = icmp eq i32 %initialized, 0
  br i1 %need, label %initialize, label %head

initialize:
  %af = call i32 @__register_atfork(ptr null, ptr null,
                                    ptr @autosched_pool_after_fork_child, ptr null)
  %cpus = call i32 @autosched_count_cpus()
  store i32 %cpus, ptr @autosched_pool_cpus, align 4
  store i32 1, ptr @autosched_pool_initialized, align 4
  br label %head

head:
  %size = phi i32 [ %size0, %first ], [ %size0, %initialize ], [ %size.next, %created ]
  %enough = icmp sge i32 %size, %want
  br i1 %enough, label %done, label %create

create:
  %size.next = add nsw i32 %size, 1
  %id = zext i32 %size.next to i64
  %arg = inttoptr i64 %id to ptr
  %err = call i32 @pthread_create(ptr %tid, ptr null, ptr @autosched_worker_main, ptr %arg)
  %ok = icmp eq i32 %err, 0
  br i1 %ok, label %created, label %done

created:
  store atomic i32 %size.next, ptr @autosched_pool_size monotonic, align 4
  br label %head

done:
  %final = phi i32 [ %size0, %entry ], [ %size, %head ], [ %size, %create ]
  ret i32 %final
}


; ---------------------------------------------------------------------------------------
; i32 autosched_parallel_for(task *fn, void *closure, int32_t num_tasks)
;
; Runs fn(t, num_tasks, closure) for every t in [0, num_tasks) and returns 0 if all
; returned 0, else the nonzero code of one of them.  The caller is thread 0 and runs
; its share of the tasks itself; the pool grows to num_tasks - 1 workers (at most 255;
; beyond that each thread runs several tasks, statically: thread k runs tasks k,
; k + threads, ...).
define i32 @autosched_parallel_for(ptr %fn, ptr %closure, i32 %num_tasks) {
entry:
  %r = call i32 @autosched_launch(ptr %fn, ptr %closure, i32 %num_tasks, i32 %num_tasks,
                                  i32 0)
  ret i32 %r
}


; i32 autosched_parallel_for_dynamic(task *fn, void *closure, int32_t num_tasks,
;                                    int32_t compiled_threads)
;
; The same, on at most max_threads threads (the caller included; compiled_threads, or
; what @autosched_threads_hook answers), each claiming the
; next task of its own contiguous range when it is done with one, then tasks of the
; other ranges (see @autosched_pool_job_claims).  Kernels split a parallel loop into
; several tasks per core and launch them this way: on a shared host one core is often
; slower than the other for a while, and a static half each would make the whole loop
; wait for the slower one.
define i32 @autosched_parallel_for_dynamic(ptr %fn, ptr %closure, i32 %num_tasks,
                                           i32 %compiled_threads) {
entry:
  %hook = load ptr, ptr @autosched_threads_hook, align 8
  %hooked = icmp ne ptr %hook, null
  br i1 %hooked, label %ask, label %launch

ask:
  %asked = call i32 %hook()
  %given = icmp sgt i32 %asked, 0
  %chosen = select i1 %given, i32 %asked, i32 %compiled_threads
  br label %launch

launch:
  %max_threads = phi i32 [ %compiled_threads, %entry ], [ %chosen, %ask ]
  %cap = call i32 @llvm.smax.i32(i32 %max_threads, i32 1)
  %threads = call i32 @llvm.smin.i32(i32 %num_tasks, i32 %cap)
  %r = call i32 @autosched_launch(ptr %fn, ptr %closure, i32 %num_tasks, i32 %threads,
                                  i32 1)
  ret i32 %r
}


; Run the tasks on up to %max_threads threads (<= %num_tasks), statically (%dynamic 0)
; or claimed one at a time (1); see the two functions above.
define internal i32 @autosched_launch(ptr %fn, ptr %closure, i32 %num_tasks,
                                      i32 %max_threads, i32 %dynamic) {
entry:
  %few = icmp sle i32 %num_tasks, 1
  br i1 %few, label %direct, label %acquire

direct:
  %one = icmp eq i32 %num_tasks, 1
  br i1 %one, label %direct.call, label %nothing

direct.call:
  %r1 = call i32 %fn(i32 0, i32 1, ptr %closure)
  ret i32 %r1

nothing:
  ret i32 0

acquire:
  %cx = cmpxchg ptr @autosched_pool_busy, i32 0, i32 1 acquire monotonic, align 4
  %owned = extractvalue { i32, i1 } %cx, 1
  br i1 %owned, label %grow, label %serial

serial:
  %rs = call i32 @autosched_run_share(i32 0, i32 1, ptr %fn, ptr %closure, i32 %num_tasks)
  ret i32 %rs

grow:
  %want0 = sub nsw i32 %max_threads, 1
  %want = call i32 @llvm.smin.i32(i32 %want0, i32 255)
  %size = call i32 @autosched_pool_grow(i32 %want)
  %threads0 = add nsw i32 %size, 1
  %threads = call i32 @llvm.smin.i32(i32 %threads0, i32 %max_threads)
  %alone = icmp eq i32 %threads, 1
  br i1 %alone, label %alone.run, label %publish

alone.run:
  %ra = call i32 @autosched_run_share(i32 0, i32 1, ptr %fn, ptr %closure, i32 %num_tasks)
  store atomic i32 0, ptr @autosched_pool_busy release, align 4
  ret i32 %ra

publish:
  store ptr %fn, ptr @autosched_pool_job_fn, align 8
  store ptr %closure, ptr @autosched_pool_job_closure, align 8
  store i32 %num_tasks, ptr @autosched_pool_job_tasks, align 4
  store i32 %threads, ptr @autosched_pool_job_threads, align 4
  store i32 %dynamic, ptr @autosched_pool_job_dynamic, align 4
  br label %ranges

ranges:
  ; each thread's counter at the start of its range (the workers see them after the
  ; release of their WORK below)
  %rk = phi i64 [ 0, %publish ], [ %rk.next, %ranges ]
  %r.threads = sext i32 %threads to i64
  %r.tasks = sext i32 %num_tasks to i64
  %r.start = call i64 @autosched_range_start(i64 %rk, i64 %r.threads, i64 %r.tasks)
  %r.counter = getelementptr inbounds [256 x [8 x i64]], ptr @autosched_pool_job_claims,
                                      i64 0, i64 %rk, i64 0
  store atomic i64 %r.start, ptr %r.counter monotonic, align 8
  %rk.next = add nuw nsw i64 %rk, 1
  %ranges.more = icmp slt i64 %rk.next, %r.threads
  br i1 %ranges.more, label %ranges, label %published

published:
  %cpus = load i32, ptr @autosched_pool_cpus, align 4
  %oversubscribed = icmp sgt i32 %threads, %cpus
  %spin.count = load atomic i32, ptr @autosched_spin_count monotonic, align 4
  %spins = select i1 %oversubscribed, i32 0, i32 %spin.count
  store i32 %spins, ptr @autosched_pool_job_spins, align 4
  store atomic i32 0, ptr @autosched_pool_error monotonic, align 4
  %workers = sub nsw i32 %threads, 1
  store atomic i32 %workers, ptr @autosched_pool_pending monotonic, align 4
  br label %assign

assign:
  %w = phi i64 [ 1, %published ], [ %w.next, %assign.next ]
  %state = getelementptr inbounds [256 x [16 x i32]], ptr @autosched_pool_state,
                                  i64 0, i64 %w, i64 0
  %old = atomicrmw xchg ptr %state, i32 1 release, align 4
  %was.asleep = icmp eq i32 %old, 2
  br i1 %was.asleep, label %wake, label %assign.next

wake:
  ; syscall(SYS_futex, state, FUTEX_WAKE_PRIVATE, 1)
  %fw = call i64 (i64, ...) @syscall(i64 202, ptr %state, i64 129, i64 1)
  br label %assign.next

assign.next:
  %w.next = add nuw nsw i64 %w, 1
  %threads64 = zext i32 %threads to i64
  %assign.more = icmp ult i64 %w.next, %threads64
  br i1 %assign.more, label %assign, label %own

own:
  %r0 = call i32 @autosched_run_part(i32 0, i32 %threads, ptr %fn, ptr %closure,
                                     i32 %num_tasks, i32 %dynamic)
  ; Wait for the workers by spinning: their tasks are about as long as ours, shorter
  ; than a futex round trip.  After 2048 pauses (at once when there are more threads
  ; than CPUs), yield the core each round, so a worker waiting for a core gets ours.
  %patience = select i1 %oversubscribed, i32 0, i32 2048
  br label %wait

wait:
  %k = phi i32 [ 0, %own ], [ %k.next, %wait.pause ], [ %k.next, %wait.yield ]
  %left = load atomic i32, ptr @autosched_pool_pending acquire, align 4
  %finished = icmp eq i32 %left, 0
  br i1 %finished, label %finish, label %wait.step

wait.step:
  %k.next = add nuw nsw i32 %k, 1
  %patient = icmp ult i32 %k, %patience
  br i1 %patient, label %wait.pause, label %wait.yield

wait.pause:
  call void @llvm.x86.sse2.pause()
  br label %wait

wait.yield:
  %y = call i32 @sched_yield()
  br label %wait

finish:
  %err = load atomic i32, ptr @autosched_pool_error monotonic, align 4
  store atomic i32 0, ptr @autosched_pool_busy release, align 4
  %own.failed = icmp ne i32 %r0, 0
  %result = select i1 %own.failed, i32 %r0, i32 %err
  ret i32 %result
}


; i32 autosched_num_workers(void): worker threads in the pool (the caller not counted).
define i32 @autosched_num_workers() {
entry:
  %n = load atomic i32, ptr @autosched_pool_size monotonic, align 4
  ret i32 %n
}


; ---------------------------------------------------------------------------------------
; CLOCK_MONOTONIC in nanoseconds (struct timespec is {i64 tv_sec, i64 tv_nsec}).
define internal i64 @autosched_now_ns() {
entry:
  %ts = alloca { i64, i64 }, align 8
  %rc = call i32 @clock_gettime(i32 1, ptr %ts)
  %sec = load i64, ptr %ts, align 8
  %nsec.p = getelementptr inbounds { i64, i64 }, ptr %ts, i32 0, i32 1
  %nsec = load i64, ptr %nsec.p, align 8
  %sec.ns = mul i64 %sec, 1000000000
  %ns = add i64 %sec.ns, %nsec
  ret i64 %ns
}


; Call fn(args) %number times; returns the first nonzero code (at once), else 0.
define internal i32 @autosched_call_n(ptr %fn, ptr %args, i32 %number) {
entry:
  br label %head

head:
  %i = phi i32 [ 0, %entry ], [ %i.next, %ok ]
  %more = icmp slt i32 %i, %number
  br i1 %more, label %body, label %done

body:
  %rc = call i32 %fn(ptr %args)
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %fail, label %ok

ok:
  %i.next = add nuw nsw i32 %i, 1
  br label %head

fail:
  ret i32 %rc

done:
  ret i32 0
}


; i32 autosched_time(kernel *fn, void *args, int32_t number, int32_t repeat,
;                    int32_t min_repeat_ms, int32_t cooldown_ms, double *results,
;                    int32_t warmup)
;
; TVM time_evaluator semantics: one warm-up call (none when warmup is 0: the caller has
; just run the kernel, or has flushed the caches on purpose), then `repeat` measurements of
; `number` back-to-back calls each, storing seconds per call in results[0..repeat).
; A measurement shorter than min_repeat_ms (when > 0) is redone with `number` raised
; to max(2 * number, ceil(number * min_repeat_ms / elapsed_ms * 1.1)), capped at 2^30,
; and the raised number is kept for the following repeats.  Sleeps cooldown_ms between
; repeats when > 0.  Returns the first nonzero code fn returns, else 0.
define i32 @autosched_time(ptr %fn, ptr %args, i32 %number, i32 %repeat, i32 %min_repeat_ms,
                           i32 %cooldown_ms, ptr %results, i32 %warmup) {
entry:
  %sleep.ts = alloca { i64, i64 }, align 8
  %want.warm = icmp ne i32 %warmup, 0
  br i1 %want.warm, label %warm.call, label %start

warm.call:
  %warm = call i32 %fn(ptr %args)
  %warm.failed = icmp ne i32 %warm, 0
  br i1 %warm.failed, label %fail, label %start

start:
  %n0 = call i32 @llvm.smax.i32(i32 %number, i32 1)
  %min.ms64 = sext i32 %min_repeat_ms to i64
  %min.total.ns = mul nsw i64 %min.ms64, 1000000
  br label %repeat.head

repeat.head:
  %r = phi i32 [ 0, %start ], [ %r.next, %repeat.next ]
  %n = phi i32 [ %n0, %start ], [ %n.used, %repeat.next ]
  %more = icmp slt i32 %r, %repeat
  br i1 %more, label %measure, label %done

measure:
  %n.used = phi i32 [ %n, %repeat.head ], [ %n.raised, %raise ]
  %t0 = call i64 @autosched_now_ns()
  %rc = call i32 @autosched_call_n(ptr %fn, ptr %args, i32 %n.used)
  %t1 = call i64 @autosched_now_ns()
  %failed = icmp ne i32 %rc, 0
  br i1 %failed, label %fail.measure, label %check

check:
  %elapsed = sub i64 %t1, %t0
  %too.short = icmp slt i64 %elapsed, %min.total.ns
  %capped = icmp sge i32 %n.used, 1073741824
  %can.raise = xor i1 %capped, true
  %redo = and i1 %too.short, %can.raise
  br i1 %redo, label %raise, label %record

raise:
  ; In nanoseconds: number * min_ns / elapsed_ns * 1.1, with elapsed_ns >= 1.
  %el.pos = call i64 @llvm.smax.i64(i64 %elapsed, i64 1)
  %el.f = sitofp i64 %el.pos to double
  %min.f = sitofp i64 %min.total.ns to double
  %n.f = sitofp i32 %n.used to double
  %ratio = fdiv double %min.f, %el.f
  %scaled = fmul double %n.f, %ratio
  %margin = fmul double %scaled, 1.1
  %wanted = call double @llvm.ceil.f64(double %margin)
  %in.range = fcmp olt double %wanted, 1073741824.0
  %target.f = select i1 %in.range, double %wanted, double 1073741824.0
  %target = fptosi double %target.f to i64
  %n64 = sext i32 %n.used to i64
  %doubled = shl nsw i64 %n64, 1
  %grown = call i64 @llvm.smax.i64(i64 %doubled, i64 %target)
  %bounded = call i64 @llvm.smin.i64(i64 %grown, i64 1073741824)
  %n.raised = trunc i64 %bounded to i32
  br label %measure

record:
  %el.d = sitofp i64 %elapsed to double
  %n.d = sitofp i32 %n.used to double
  %ns.per.call = fdiv double %el.d, %n.d
  %seconds = fmul double %ns.per.call, 1.0e-9
  %r64 = sext i32 %r to i64
  %slot = getelementptr inbounds double, ptr %results, i64 %r64
  store double %seconds, ptr %slot, align 8
  %r.next = add nsw i32 %r, 1
  %cool = icmp sgt i32 %cooldown_ms, 0
  %not.last = icmp slt i32 %r.next, %repeat
  %sleep.now = and i1 %cool, %not.last
  br i1 %sleep.now, label %cooldown, label %repeat.next

cooldown:
  ; nanosleep({ms / 1000, (ms % 1000) * 1e6}); an early return on a signal only
  ; shortens the pause, which is harmless.
  %ms = sext i32 %cooldown_ms to i64
  %sec = sdiv i64 %ms, 1000
  %ms.rem = srem i64 %ms, 1000
  %nsec = mul nsw i64 %ms.rem, 1000000
  store i64 %sec, ptr %sleep.ts, align 8
  %nsec.p = getelementptr inbounds { i64, i64 }, ptr %sleep.ts, i32 0, i32 1
  store i64 %nsec, ptr %nsec.p, align 8
  %slept = call i32 @nanosleep(ptr %sleep.ts, ptr null)
  br label %repeat.next

repeat.next:
  br label %repeat.head

done:
  ret i32 0

fail.measure:
  ret i32 %rc

fail:
  ret i32 %warm
}


; ---------------------------------------------------------------------------------------
; i32 autosched_flush_lines(void *base, int64_t bytes, int32_t tasks, int32_t opt)
;
; Evict every cache line that holds a byte of [base, base + bytes) from every level of
; the caches (a dirty line is written back first, and the line leaves the caches of
; every core), split into `tasks` equal runs of lines on the pool, then fence.  `opt`
; nonzero: with clflushopt, which the CPU must have (Skylake, Zen and later: the caller
; asks the host's features), else with clflush, which every x86-64 has and which is 20
; to 50 times slower (one line after another: 16 MB took 40 ms, against 0.7 ms, on an
; Emerald Rapids core).  clflushopt is inline assembly, so this file builds for any
; x86 target.  The tuner's cold timings (tuner/runner.py) call it on a kernel's
; arguments before each call: the cost follows what the kernel touches and not the size
; of the last-level cache (writing a buffer twice its size wrote 520 MB per call on a
; 260 MB L3), and through the pool it leaves the workers spinning, as they are between
; the layers of a model.  Returns 0.
define i32 @autosched_flush_lines(ptr %base, i64 %bytes, i32 %tasks, i32 %opt) {
entry:
  %closure = alloca { ptr, i64, i32 }, align 8
  store ptr %base, ptr %closure, align 8
  %bytes.p = getelementptr inbounds { ptr, i64, i32 }, ptr %closure, i32 0, i32 1
  store i64 %bytes, ptr %bytes.p, align 8
  %opt.p = getelementptr inbounds { ptr, i64, i32 }, ptr %closure, i32 0, i32 2
  store i32 %opt, ptr %opt.p, align 8
  %n = call i32 @llvm.smax.i32(i32 %tasks, i32 1)
  %r = call i32 @autosched_parallel_for(ptr @autosched_flush_task, ptr %closure, i32 %n)
  ret i32 %r
}


; Task %id of %tasks of autosched_flush_lines: its equal run of the 64-byte lines.
define internal i32 @autosched_flush_task(i32 %id, i32 %tasks, ptr %closure) {
entry:
  %base = load ptr, ptr %closure, align 8
  %bytes.p = getelementptr inbounds { ptr, i64, i32 }, ptr %closure, i32 0, i32 1
  %bytes = load i64, ptr %bytes.p, align 8
  %opt.p = getelementptr inbounds { ptr, i64, i32 }, ptr %closure, i32 0, i32 2
  %opt = load i32, ptr %opt.p, align 8
  %use.opt = icmp ne i32 %opt, 0
  %empty = icmp sle i64 %bytes, 0
  br i1 %empty, label %done, label %lines

lines:
  %start = ptrtoint ptr %base to i64
  %first = lshr i64 %start, 6
  %end = add i64 %start, %bytes
  %end.up = add i64 %end, 63
  %stop = lshr i64 %end.up, 6
  %count = sub i64 %stop, %first
  %id64 = zext i32 %id to i64
  %next64 = add nuw nsw i64 %id64, 1
  %tasks64 = zext i32 %tasks to i64
  %lo = call i64 @autosched_range_start(i64 %id64, i64 %tasks64, i64 %count)
  %hi = call i64 @autosched_range_start(i64 %next64, i64 %tasks64, i64 %count)
  br label %head

head:
  %k = phi i64 [ %lo, %lines ], [ %k.next, %next ]
  %more = icmp slt i64 %k, %hi
  br i1 %more, label %body, label %fence

body:
  %line = add i64 %first, %k
  %address = shl i64 %line, 6
  %p = inttoptr i64 %address to ptr
  br i1 %use.opt, label %optimized, label %plain

optimized:
  call void asm sideeffect "clflushopt $0", "*m,~{memory}"(ptr elementtype(i8) %p)
  br label %next

plain:
  call void @llvm.x86.sse2.clflush(ptr %p)
  br label %next

next:
  %k.next = add nsw i64 %k, 1
  br label %head

fence:
  call void @llvm.x86.sse2.mfence()
  br label %done

done:
  ret i32 0
}

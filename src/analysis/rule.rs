//! The typed chain from a rule to its fix to the what-if that prices it.
//!
//! A [`Finding`](super::Finding) carries its [`Rule`] and its [`Fix`]; a
//! [`WhatIf`](super::whatif::WhatIf) carries the [`Fix`] it prices. The fix's text
//! ([`Fix::text`]), the what-if that prices a fix ([`Fix::priced_as`]) and the headline
//! order ([`rank`]) are one `match` each, so a new variant makes the compiler list every
//! place that must say something about it.

use std::borrow::Cow;

use super::{Cause, Hint, Severity};
use crate::model::Ns;

/// The rule that made a finding; its [`name`](Rule::name) is the JSON `rule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Rule {
    /// Kernel launches were traced but no kernel records.
    GpuRecordsMissing,
    /// Async memcpy calls on pageable memory ran synchronously.
    CudaMemcpyAsync,
    /// Synchronous memcpy calls blocked the host.
    CudaMemcpySync,
    /// Device and stream synchronize calls, and the gaps that began at them.
    CudaApiSync,
    /// Steady-state idle gaps by cause.
    GpuGaps,
    /// Time chunks with the GPU mostly idle.
    GpuTimeUtil,
    /// Steps in which the GPU starved.
    Starvation,
    /// Kernels shorter than their launch period.
    LaunchBound,
    /// A second loop after the last step that idles more than the steady state.
    TeardownLoop,
    /// Copies from pageable memory against pinned ones of a like size.
    PageableBandwidth,
    /// A phase's copies saturate the link.
    LinkBound,
    /// A phase's copy time is in copies under 1 MiB.
    SmallCopies,
    /// One rank makes the others wait in collectives.
    Straggler,
    /// Idle that recurs every N steps: long steps or holes between steps.
    PeriodicStall,
    /// Another loop (an NVTX phase outside the steps, such as `eval`) that starves.
    LoopRegion,
    /// Two or more processes share one GPU, each waiting behind the others' work.
    SharedGpu,
}

impl Rule {
    /// Stable rule id used in reports, JSON and the viewer (`gpu_gaps`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Rule::GpuRecordsMissing => "gpu_records_missing",
            Rule::CudaMemcpyAsync => "cuda_memcpy_async",
            Rule::CudaMemcpySync => "cuda_memcpy_sync",
            Rule::CudaApiSync => "cuda_api_sync",
            Rule::GpuGaps => "gpu_gaps",
            Rule::GpuTimeUtil => "gpu_time_util",
            Rule::Starvation => "starvation",
            Rule::LaunchBound => "launch_bound",
            Rule::TeardownLoop => "teardown_loop",
            Rule::PageableBandwidth => "pageable_bandwidth",
            Rule::LinkBound => "link_bound",
            Rule::SmallCopies => "small_copies",
            Rule::Straggler => "straggler",
            Rule::PeriodicStall => "periodic_stall",
            Rule::LoopRegion => "loop_region",
            Rule::SharedGpu => "shared_gpu",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a finding tells the user to do. The first five are the fixes a what-if prices.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
// The derives make `Fix::serialize`/`Fix::deserialize` (every variant, for the analysis
// cache); the trait impls below write the id alone in JSON.
#[serde(remote = "Self")]
pub enum Fix {
    /// Copy from pinned memory (`pin_memory`).
    PinMemory,
    /// Prefetch the next batch on a side stream, move fewer bytes (`prefetch`).
    Prefetch,
    /// Raise DataLoader workers, make transforms cheaper (`more_workers`).
    MoreWorkers,
    /// Drop or defer the per-step syncs that drain the queue (`drop_sync`).
    DropSync,
    /// Capture the step in a CUDA graph, fuse kernels (`cuda_graphs`).
    CudaGraphs,
    /// Remove per-step synchronization a thread blocks in.
    RemoveSync,
    /// Find what the launching thread waits for in an OS call.
    FindWaitSource,
    /// Move CPU work off the launching thread.
    OffloadHostWork,
    /// More CPUs for the job, or cheaper per-sample work.
    MoreCpus,
    /// Faster or cached storage, reads that overlap compute.
    FasterStorage,
    /// Find what already-queued work waited for.
    Unqueue,
    /// Capture fewer events: the time is the profiler's.
    ProfilerOverhead,
    /// Trace the CPU side to explain the idle.
    TraceCpu,
    /// Remove the sleep on the launching thread.
    RemoveSleep,
    /// Warm up JIT compiles before the run and keep their caches.
    WarmUpCompile,
    /// Keep the GIL free for the launching thread.
    ReleaseGil,
    /// Stop OpenMP threads spinning on the CPUs the loop needs.
    TameOpenMp,
    /// Capture with CUDA tracing that records kernels.
    CaptureGpu,
    /// Use async copies on a non-default stream from pinned memory.
    AsyncCopy,
    /// Copy results into a pinned host buffer.
    PinnedResults,
    /// Kernels shorter than their launch: a CUDA graph, fusion, larger batches.
    GraphTheStep,
    /// Kernels shorter than their launch in a step that syncs: remove the syncs first.
    SyncsFirst,
    /// One job per GPU: processes sharing one wait behind each other (`one_job_per_gpu`).
    OneJobPerGpu,
    /// Graphs already replay: let the host run ahead between replays.
    HostAheadOfGraphs,
    /// Collate the samples into one pinned buffer and copy once.
    Collate,
    /// The idle is start-up or teardown: warm up and capture the loop alone.
    StartupOnly,
    /// A second loop after the steps: analyse it on its own; its gaps' cause's fix.
    SecondLoop(Cause),
    /// Do the work of a periodic stall less often or off the loop (`less_often`).
    LessOften,
    /// Keep DataLoader workers alive across epochs (`persistent_workers`).
    PersistentWorkers,
    /// Feed another loop as the training loop is fed (`feed_loop`).
    FeedLoop,
    /// Stop the allocator from synchronising every step: no `empty_cache()` in the loop,
    /// stable shapes, expandable segments, reused pinned buffers.
    AllocatorChurn,
    /// Save checkpoints less often, or asynchronously off the launching thread.
    SaveLessOften,
    /// Even out the straggling rank.
    BalanceRanks {
        /// The straggler.
        rank: u32,
        /// What of it is slow (`its steps`, ``its `forward` ``).
        what: String,
        /// The collective the others wait in.
        collective: String,
    },
    /// Pad or bucket input shapes to a few sizes and warm each up: cuBLAS/cuDNN choose and
    /// load kernels for every new shape in the loop (`new_shapes`).
    NewShapes,
    /// The loop sat in the DataLoader's `__next__`, in a trace with no OS data: the input
    /// pipeline's fix, without claims about the CPUs (`loader_wait`).
    LoaderWait,
}

// The fixes' words ([`Fix::text`]).
const LESS_OFTEN: &str = "The stall recurs every few steps: do its work less often or off the training loop's \
    critical path (a checkpoint: save every N steps and asynchronously, copying the state to pinned host memory and \
    writing on a background thread or process, torch.distributed.checkpoint.async_save; an evaluation or logging: \
    less often, or on another process).";
const PERSISTENT_WORKERS: &str = "The GPU idles between steps, at each epoch boundary: DataLoader workers are torn \
    down and forked again (persistent_workers=True keeps them, with a cheaper worker_init_fn), or per-epoch work \
    (evaluation, logging, checkpoints) runs there: overlap it or do it less often.";
const FEED_LOOP: &str = "A loop of its own (an evaluation, a validation pass) starves while the training steps \
    are fed: give its DataLoader workers and pinned memory as the training loader has (num_workers > 0, \
    pin_memory=True), or run it less often.";
const PIN_MEMORY: &str = "Copy from pinned memory: DataLoader(pin_memory=True) or cudaHostAlloc/cudaHostRegister, then \
    .to(device, non_blocking=True) / cudaMemcpyAsync so the copy overlaps compute.";
const PREFETCH: &str = "The link is the bottleneck: move fewer bytes (send uint8 images to the GPU and normalise there, or \
    compress), overlap the copy with compute (prefetch the next batch on a side stream with pinned \
    memory and non_blocking=True), or use a faster link (a PCIe Gen5 slot, NVLink-C2C)";
const MORE_WORKERS: &str = "The input pipeline's workers compute too slowly while CPUs the job may use are idle: raise \
    DataLoader num_workers (up to the idle CPUs), make transforms and collate cheaper (decode on the \
    GPU: DALI, torchvision v2), or cache decoded samples.";
const DROP_SYNC: &str = "A host sync emptied the GPU's queue and the host then did CPU work before launching more: drop \
    per-step .item()/.cpu()/torch.cuda.synchronize() or move them after the next step's launches, copy \
    results with non_blocking=True into pinned memory, and log every N steps.";
const CUDA_GRAPHS: &str = "Kernels are shorter than their launch overhead: capture the step in a CUDA graph \
    (torch.cuda.graphs / torch.compile mode=\"reduce-overhead\"), fuse small kernels, or raise the \
    batch size.";
const REMOVE_SYNC: &str = "Remove per-step synchronization (loss.item(), .cpu(), torch.cuda.synchronize(), \
    cudaDeviceSynchronize) or do it every N steps; order streams with events (cudaStreamWaitEvent) \
    instead of host waits.";
const FIND_WAIT_SOURCE: &str = "The launching thread waited in an OS call for something the trace does not show being produced: \
    look at what it waits for (a queue from DataLoader workers: raise num_workers and prefetch_factor; \
    a lock or another thread: see the evidence).";
const OFFLOAD_HOST_WORK: &str = "CPU work on the launching thread delays the launches: move the hot functions off the loop \
    (preprocessing into DataLoader workers or onto the GPU, no Python loops over tensors, metrics and \
    logging every N steps or on another thread).";
const MORE_CPUS: &str = "Threads were ready to run but every CPU the job may use was busy: give the job more CPUs \
    (affinity, cgroup quota) or make the per-sample work cheaper; workers beyond the usable CPUs only \
    contend (keep num_workers at or below them), and set OMP_NUM_THREADS=1 / torch.set_num_threads(1) \
    in workers.";
const FASTER_STORAGE: &str = "The input pipeline waited on I/O (storage or network) while CPUs were free: read from faster or \
    local storage, cache the dataset in RAM or the page cache, read larger sequential chunks (sharded \
    formats such as WebDataset), and raise num_workers / prefetch_factor so that reads overlap compute.";
const UNQUEUE: &str = "The work was already queued: look at what it waited for (lazy module loading: warm up or set \
    CUDA_MODULE_LOADING=EAGER; a stream wait or host function: reorder or remove it; another GPU: \
    balance the work).";
const PROFILER_OVERHEAD: &str = "Profiler overhead, not the application: nsys flushed its buffers. Capture fewer events (narrower \
    --trace, --capture-range) or raise buffer sizes; this time is not counted in findings.";
const TRACE_CPU: &str = "Trace the CPU side to explain the idle time: nsys profile --trace=cuda,nvtx,osrt --sample=cpu, and \
    check cross-stream dependencies (cudaStreamWaitEvent).";
const REMOVE_SLEEP: &str = "The launching thread sleeps (time.sleep, a rate limiter or a polling loop): remove the sleep, or \
    wait on the event that it stands for.";
const WARM_UP_COMPILE: &str = "A one-time JIT compile (Triton / torch.compile, nvFuser, NVRTC) ran inside the loop: warm up \
    before the measured or production run, keep the compile cache (TORCHINDUCTOR_CACHE_DIR, \
    TRITON_CACHE_DIR, CUDA_CACHE_PATH), and avoid recompiles on new shapes (fixed batch shapes, \
    drop_last=True, torch._dynamo.mark_dynamic).";
const RELEASE_GIL: &str = "The launching thread waited for Python's GIL while another thread of the process held it (named \
    in the evidence): move that work out of the process (DataLoader worker processes rather than \
    threads), make it release the GIL (native code, fewer Python-level loops), or use a free-threaded \
    Python. A pin-memory thread (pt_data_pin) cannot leave the process: fewer Python threads, or \
    pin_memory=False with pinned buffers reused and filled by the loop.";
const TAME_OPENMP: &str = "OpenMP threads spin-wait in libgomp after each parallel region and hold the CPUs the loop \
    needs: set OMP_NUM_THREADS=1 / torch.set_num_threads(1) in DataLoader workers (worker_init_fn) and keep the \
    training process's threads at or below its free cores; OMP_WAIT_POLICY=PASSIVE (or GOMP_SPINCOUNT=0) stops the \
    spinning; a pin-memory thread contends with them for the same CPUs.";
const CAPTURE_GPU: &str = "Capture with CUDA tracing on (nsys profile --trace=cuda,...) using an nsys version that supports \
    this GPU driver; check `nsys status -e` and the capture's diagnostics for CUPTI errors.";
const ASYNC_COPY: &str = "Use cudaMemcpyAsync on a non-default stream with pinned host memory (PyTorch: .to(device, \
    non_blocking=True) from pinned tensors) and synchronize only where the result is needed.";
const PINNED_RESULTS: &str = "Copy results into pinned host memory: preallocate a pinned buffer (torch.empty(..., \
    pin_memory=True)) and .copy_(out, non_blocking=True), or cudaHostAlloc; read it after an event, not \
    a device sync.";
const GRAPH_THE_STEP: &str = "Kernels are shorter than the time to launch them: capture the step in a CUDA graph \
    (torch.cuda.graphs, torch.compile(mode=\"reduce-overhead\")), fuse small kernels, use larger \
    batches, and drop per-token or per-step host syncs (.item(), .cpu()) that stop the host from \
    running ahead.";
const SYNCS_FIRST: &str = "Kernels are shorter than the time to launch them, and the step waits for the GPU: remove the \
    syncs first (copies from pinned memory with non_blocking=True instead of pageable ones, no \
    per-step .item()/.cpu()/torch.cuda.synchronize(), static shapes instead of nonzero() or boolean \
    masks) so that the host runs ahead; then capture the step in a CUDA graph or fuse small kernels.";
const ONE_JOB_PER_GPU: &str = "Processes share this GPU and each one's kernels wait in the queue behind the others': run \
    one job per GPU (one after the other, or on separate GPUs), or merge the work into one process; \
    where sharing is intended, partition the GPU (MIG) or use MPS so that each gets a fixed share.";
const HOST_AHEAD_OF_GRAPHS: &str = "The steps already replay CUDA graphs; the idle is the host between replays: drop per-token or \
    per-step host syncs (.item(), .cpu()) so that the host runs ahead, capture more work per graph \
    (several tokens or steps), and use larger batches.";
const COLLATE: &str = "Each copy pays a fixed cost: collate the samples into one contiguous pinned buffer on the host \
    (torch.stack / the DataLoader's collate) and make one copy per batch";
const STARTUP_ONLY: &str = "This idle is one-time start-up or teardown (CUDA context, lazy module loading, cuDNN autotuning, \
    JIT compiles, the first batches), not the loop: warm up before the measured run, keep JIT and \
    autotuning caches (TORCHINDUCTOR_CACHE_DIR, CUDA_CACHE_PATH), and capture the loop alone (nsys \
    profile --capture-range=cudaProfilerApi around torch.cuda.profiler.start()/stop(), or --delay).";

const ALLOCATOR_CHURN: &str = "Allocator calls that wait for the GPU (cudaFree, cudaMalloc on a busy device, \
    cudaHostAlloc/cudaHostRegister) ran in the loop and drained its queue: drop torch.cuda.empty_cache() from the loop, \
    keep tensor shapes stable (fixed batch shapes, drop_last=True, padding to buckets) so that the caching allocator \
    reuses its blocks, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and allocate pinned host buffers once \
    and reuse them.";

const SAVE_LESS_OFTEN: &str = "The launching thread wrote a checkpoint (serialized the state and wrote and synced the \
    file) while the GPU waited: save less often, or asynchronously: copy the state to pinned host memory and write it \
    on a background thread or process (torch.distributed.checkpoint.async_save), and keep fsync off the loop.";

const NEW_SHAPES: &str = "At input shapes not seen before, the launching thread chose and loaded kernels while the \
    GPU waited: cuBLAS/cuBLASLt heuristics or cuDNN autotuning (torch.backends.cudnn.benchmark) ran for the new shape, \
    then CUDA loaded the chosen kernel lazily: pad or bucket the inputs to a few sizes (batch sizes, sequence \
    lengths), warm up every size before serving or measuring, set CUDA_MODULE_LOADING=EAGER, and keep \
    cudnn.benchmark off where shapes keep changing.";

const LOADER_WAIT: &str = "The loop spent the gap in the DataLoader's __next__, waiting for its workers' next batch \
    or (num_workers=0) loading it itself: raise DataLoader num_workers and prefetch_factor, make transforms and collate \
    cheaper, or cache decoded samples; this trace has no OS data, so it cannot say whether CPUs were free for more \
    workers: check that before adding them.";

impl serde::Serialize for Fix {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() { s.serialize_str(self.id()) } else { Fix::serialize(self, s) }
    }
}

impl<'de> serde::Deserialize<'de> for Fix {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Fix::deserialize(d)
    }
}

impl Fix {
    /// The fix for the idle of a region of this kind (none for ordinary steps: their
    /// gaps' causes have theirs).
    pub fn for_region(kind: super::RegionKind) -> Option<Fix> {
        match kind {
            super::RegionKind::Steps => None,
            super::RegionKind::Periodic => Some(Fix::LessOften),
            super::RegionKind::BetweenSteps => Some(Fix::PersistentWorkers),
            super::RegionKind::Loop => Some(Fix::FeedLoop),
        }
    }

    /// The fix for gaps of `cause`.
    pub fn for_cause(cause: Cause) -> Fix {
        match cause {
            Cause::SyncWait => Fix::RemoveSync,
            Cause::SyncDrain => Fix::DropSync,
            Cause::PageableCopy => Fix::PinMemory,
            Cause::HostWait => Fix::FindWaitSource,
            Cause::HostBusy => Fix::OffloadHostWork,
            Cause::WorkerBusy => Fix::MoreWorkers,
            Cause::LaunchBound => Fix::CudaGraphs,
            Cause::CpuContention => Fix::MoreCpus,
            Cause::IoWait => Fix::FasterStorage,
            Cause::Queued => Fix::Unqueue,
            Cause::Profiler => Fix::ProfilerOverhead,
            Cause::Unknown => Fix::TraceCpu,
        }
    }

    /// The fix for gaps of `cause` whose evidence says `hint`: the evidence decides where
    /// it knows more than the cause.
    pub fn for_gaps(cause: Cause, hint: Hint) -> Fix {
        match hint {
            Hint::Sleep => Fix::RemoveSleep,
            Hint::PageableSync => Fix::PinMemory,
            Hint::Compile => Fix::WarmUpCompile,
            Hint::Gil => Fix::ReleaseGil,
            Hint::Allocator => Fix::AllocatorChurn,
            Hint::Checkpoint => Fix::SaveLessOften,
            Hint::OpenMp => Fix::TameOpenMp,
            Hint::Loader => Fix::LoaderWait,
            Hint::NewShapes => Fix::NewShapes,
            Hint::None => Fix::for_cause(cause),
        }
    }

    /// Stable id (`pin_memory`, `more_workers`, ...): the what-if's `fix` in JSON.
    pub fn id(&self) -> &'static str {
        match self {
            Fix::PinMemory => "pin_memory",
            Fix::Prefetch => "prefetch",
            Fix::MoreWorkers => "more_workers",
            Fix::DropSync => "drop_sync",
            Fix::CudaGraphs => "cuda_graphs",
            Fix::RemoveSync => "remove_sync",
            Fix::FindWaitSource => "find_wait_source",
            Fix::OffloadHostWork => "offload_host_work",
            Fix::MoreCpus => "more_cpus",
            Fix::FasterStorage => "faster_storage",
            Fix::Unqueue => "unqueue",
            Fix::ProfilerOverhead => "profiler_overhead",
            Fix::TraceCpu => "trace_cpu",
            Fix::RemoveSleep => "remove_sleep",
            Fix::WarmUpCompile => "warm_up_compile",
            Fix::ReleaseGil => "release_gil",
            Fix::TameOpenMp => "tame_openmp",
            Fix::CaptureGpu => "capture_gpu",
            Fix::AsyncCopy => "async_copy",
            Fix::PinnedResults => "pinned_results",
            Fix::GraphTheStep => "graph_the_step",
            Fix::SyncsFirst => "syncs_first",
            Fix::OneJobPerGpu => "one_job_per_gpu",
            Fix::HostAheadOfGraphs => "host_ahead_of_graphs",
            Fix::Collate => "collate",
            Fix::StartupOnly => "startup_only",
            Fix::SecondLoop(_) => "second_loop",
            Fix::LessOften => "less_often",
            Fix::PersistentWorkers => "persistent_workers",
            Fix::FeedLoop => "feed_loop",
            Fix::AllocatorChurn => "allocator_churn",
            Fix::SaveLessOften => "save_less_often",
            Fix::BalanceRanks { .. } => "balance_ranks",
            Fix::NewShapes => "new_shapes",
            Fix::LoaderWait => "loader_wait",
        }
    }

    /// The what-if that prices this fix, if one can: what the fix removes from the step.
    /// Contention's fix warns against more workers and nothing prices more CPUs; the
    /// fixes of sleeps, compiles and the GIL are not priced.
    pub fn priced_as(&self) -> Option<Fix> {
        match self {
            Fix::PinMemory | Fix::PinnedResults => Some(Fix::PinMemory),
            Fix::Prefetch => Some(Fix::Prefetch),
            Fix::MoreWorkers | Fix::FindWaitSource | Fix::FasterStorage | Fix::LoaderWait => Some(Fix::MoreWorkers),
            Fix::NewShapes => Some(Fix::NewShapes),
            Fix::AllocatorChurn => Some(Fix::AllocatorChurn),
            Fix::DropSync => Some(Fix::DropSync),
            Fix::CudaGraphs | Fix::GraphTheStep | Fix::HostAheadOfGraphs => Some(Fix::CudaGraphs),
            Fix::SecondLoop(cause) => Fix::for_cause(*cause).priced_as(),
            Fix::LessOften => Some(Fix::LessOften),
            Fix::PersistentWorkers => Some(Fix::PersistentWorkers),
            Fix::FeedLoop => Some(Fix::FeedLoop),
            Fix::OneJobPerGpu => Some(Fix::OneJobPerGpu),
            Fix::RemoveSync
            | Fix::OffloadHostWork
            | Fix::MoreCpus
            | Fix::Unqueue
            | Fix::ProfilerOverhead
            | Fix::TraceCpu
            | Fix::RemoveSleep
            | Fix::WarmUpCompile
            | Fix::ReleaseGil
            | Fix::TameOpenMp
            | Fix::CaptureGpu
            | Fix::AsyncCopy
            | Fix::Collate
            | Fix::StartupOnly
            | Fix::SyncsFirst
            | Fix::SaveLessOften
            | Fix::BalanceRanks { .. } => None,
        }
    }

    /// The fix in words.
    pub fn text(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Fix::PinMemory => PIN_MEMORY,
            Fix::Prefetch => PREFETCH,
            Fix::MoreWorkers => MORE_WORKERS,
            Fix::DropSync => DROP_SYNC,
            Fix::CudaGraphs => CUDA_GRAPHS,
            Fix::RemoveSync => REMOVE_SYNC,
            Fix::FindWaitSource => FIND_WAIT_SOURCE,
            Fix::OffloadHostWork => OFFLOAD_HOST_WORK,
            Fix::MoreCpus => MORE_CPUS,
            Fix::FasterStorage => FASTER_STORAGE,
            Fix::Unqueue => UNQUEUE,
            Fix::ProfilerOverhead => PROFILER_OVERHEAD,
            Fix::TraceCpu => TRACE_CPU,
            Fix::RemoveSleep => REMOVE_SLEEP,
            Fix::WarmUpCompile => WARM_UP_COMPILE,
            Fix::ReleaseGil => RELEASE_GIL,
            Fix::TameOpenMp => TAME_OPENMP,
            Fix::CaptureGpu => CAPTURE_GPU,
            Fix::AsyncCopy => ASYNC_COPY,
            Fix::PinnedResults => PINNED_RESULTS,
            Fix::GraphTheStep => GRAPH_THE_STEP,
            Fix::SyncsFirst => SYNCS_FIRST,
            Fix::OneJobPerGpu => ONE_JOB_PER_GPU,
            Fix::HostAheadOfGraphs => HOST_AHEAD_OF_GRAPHS,
            Fix::Collate => COLLATE,
            Fix::StartupOnly => STARTUP_ONLY,
            Fix::LessOften => LESS_OFTEN,
            Fix::PersistentWorkers => PERSISTENT_WORKERS,
            Fix::FeedLoop => FEED_LOOP,
            Fix::AllocatorChurn => ALLOCATOR_CHURN,
            Fix::SaveLessOften => SAVE_LESS_OFTEN,
            Fix::NewShapes => NEW_SHAPES,
            Fix::LoaderWait => LOADER_WAIT,
            Fix::SecondLoop(cause) => {
                return Cow::Owned(format!(
                    "Analyse that loop on its own: mark its iterations with NVTX and choose them with --step-phase \
                     NAME (or open the window in the viewer); for its gaps: {}",
                    Fix::for_cause(*cause).text()
                ));
            }
            Fix::BalanceRanks { rank, what, collective } => {
                return Cow::Owned(format!(
                    "Balance the ranks: find why rank {rank}'s {what} is slower than the others' (uneven batches or \
                     sequence lengths, its input pipeline, CPU work or contention on its host, a slower or throttled \
                     GPU) and even it out; the other ranks' GPUs idle inside {collective} until it arrives."
                ));
            }
        })
    }
}

/// The headline order of a finding (larger first): a finding with a fix worth acting on
/// (at least a warning, saving [`MINOR_SAVING`] of the step or more) before the rest; a
/// straggler first among them; then every finding but those whose own what-if saves under
/// [`MINOR_SAVING`] (known to save little, they go after the unpriced ones); then what its
/// fix saves per steady step where a what-if prices it (a priced fix before one nothing
/// prices); then severity; then, when steady
/// gaps wait on the syncs of pageable copies (`pageable_sync`), the pinned-memory fix;
/// then weight.
pub(crate) fn rank(f: &super::Finding, pageable_sync: bool) -> (bool, bool, bool, Ns, Severity, bool, Ns) {
    let little = saves_little(f);
    let actionable = f.fix.is_some() && f.severity >= Severity::Warning && !little;
    let saving = f.whatif.as_ref().filter(|_| f.fix.is_some()).map_or(0, |w| w.saving_per_step_ns);
    let pinned = pageable_sync && f.fix == Some(Fix::PinMemory);
    (actionable, f.rule == Rule::Straggler, !little, saving, f.severity, pinned, f.weight)
}

/// Share of the step under which a fix's saving is minor.
pub(crate) const MINOR_SAVING: f64 = 0.05;

/// True when the finding's own what-if saves under [`MINOR_SAVING`] of the step.
pub(crate) fn saves_little(f: &super::Finding) -> bool {
    f.whatif
        .as_ref()
        .is_some_and(|w| (w.saving_per_step_ns as f64) < MINOR_SAVING * (w.saving_per_step_ns + w.step_ns_after) as f64)
}

/// Put the headline first: the one sort of the findings, by [`rank`], larger first (the
/// rules' order breaks ties); `gpu_gaps`, the summary, right after the headline, or first
/// when no finding has a fix worth acting on (a fed loop: nothing saves 5% of the step).
pub(crate) fn order(findings: &mut Vec<super::Finding>, pageable_sync: bool) {
    findings.sort_by_cached_key(|f| std::cmp::Reverse(rank(f, pageable_sync)));
    let headline_acts = findings.first().is_some_and(|f| rank(f, pageable_sync).0);
    let at = usize::from(headline_acts);
    if let Some(i) = findings.iter().position(|f| f.rule == Rule::GpuGaps).filter(|&i| i > at) {
        let summary = findings.remove(i);
        findings.insert(at, summary);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Finding;

    fn finding(rule: Rule, severity: Severity, weight: Ns, fix: Fix) -> Finding {
        Finding::new(rule, severity, String::new(), Vec::new()).with_fix(fix, String::new()).weighing(weight)
    }

    fn priced(rule: Rule, severity: Severity, weight: Ns, saving: Ns) -> Finding {
        let mut f = finding(rule, severity, weight, Fix::PinMemory);
        f.whatif = Some(crate::analysis::whatif::WhatIf {
            fix: Fix::PinMemory,
            saving_per_step_ns: saving,
            step_ns_after: 100 - saving,
            limited_by: "none",
            basis: String::new(),
        });
        f
    }

    #[test]
    fn the_headline_is_the_fix_that_saves_most_and_gpu_gaps_follows_it() {
        let mut gaps = finding(Rule::GpuGaps, Severity::Critical, 1000, Fix::OffloadHostWork);
        gaps.fix = None;
        // Priced savings per step: 30, and 20 though critical; a heavy unpriced fix after
        // them; the straggler first whatever it saves; gpu_gaps (no fix) second.
        let mut v = vec![
            finding(Rule::GpuTimeUtil, Severity::Info, 0, Fix::StartupOnly),
            priced(Rule::PageableBandwidth, Severity::Warning, 5, 30),
            gaps,
            finding(Rule::LaunchBound, Severity::Warning, 400, Fix::OffloadHostWork),
            priced(Rule::Starvation, Severity::Critical, 1, 20),
            finding(Rule::Straggler, Severity::Warning, 1, Fix::RemoveSync),
        ];
        order(&mut v, false);
        let rules: Vec<Rule> = v.iter().map(|f| f.rule).collect();
        let want = [
            Rule::Straggler,
            Rule::GpuGaps,
            Rule::PageableBandwidth,
            Rule::Starvation,
            Rule::LaunchBound,
            Rule::GpuTimeUtil,
        ];
        assert_eq!(rules, want);
    }

    #[test]
    fn among_unpriced_fixes_of_one_severity_the_pinned_fix_leads_where_steady_gaps_wait_on_pageable_syncs() {
        let make = || {
            vec![
                finding(Rule::Starvation, Severity::Warning, 10, Fix::OffloadHostWork),
                finding(Rule::CudaMemcpyAsync, Severity::Warning, 5, Fix::PinMemory),
            ]
        };
        let rules = |v: &[Finding]| v.iter().map(|f| f.rule).collect::<Vec<_>>();
        let (mut plain, mut paged) = (make(), make());
        order(&mut plain, false);
        order(&mut paged, true);
        assert_eq!(rules(&plain), [Rule::Starvation, Rule::CudaMemcpyAsync]);
        assert_eq!(rules(&paged), [Rule::CudaMemcpyAsync, Rule::Starvation]);
    }

    #[test]
    fn a_fix_that_saves_under_five_percent_of_the_step_is_never_the_headline() {
        // 4% of the step, critical and heavy, goes after a 5% warning; an info stays last.
        let mut v = vec![
            priced(Rule::GpuGaps, Severity::Critical, 1000, 4),
            finding(Rule::GpuTimeUtil, Severity::Info, 0, Fix::StartupOnly),
            priced(Rule::CudaMemcpyAsync, Severity::Warning, 1, 5),
        ];
        order(&mut v, false);
        let rules: Vec<Rule> = v.iter().map(|f| f.rule).collect();
        assert_eq!(rules, [Rule::CudaMemcpyAsync, Rule::GpuGaps, Rule::GpuTimeUtil]);
    }

    #[test]
    fn where_no_fix_is_worth_acting_on_a_priced_one_that_saves_little_does_not_lead() {
        // All info: a sync whose what-if saves 1% of the step goes after the unpriced ones
        // (r10_var_seq's first run led with it, against issue 32's "never first").
        let mut v = vec![
            priced(Rule::CudaApiSync, Severity::Info, 5, 1),
            finding(Rule::Starvation, Severity::Info, 80, Fix::OffloadHostWork),
            finding(Rule::LaunchBound, Severity::Info, 90, Fix::OffloadHostWork),
        ];
        order(&mut v, false);
        let rules: Vec<Rule> = v.iter().map(|f| f.rule).collect();
        assert_eq!(rules, [Rule::LaunchBound, Rule::Starvation, Rule::CudaApiSync]);
        // With the summary there, the summary leads: no fix is worth acting on.
        let mut gaps = finding(Rule::GpuGaps, Severity::Info, 10, Fix::OffloadHostWork);
        gaps.fix = None;
        v.push(gaps);
        order(&mut v, false);
        assert_eq!(v[0].rule, Rule::GpuGaps);
    }

    #[test]
    fn every_priced_fix_prices_itself_and_every_cause_has_a_fix() {
        for c in Cause::ALL {
            let f = Fix::for_cause(c);
            assert!(!f.text().is_empty(), "{c:?}");
            // A fix priced as another is priced as one that prices itself.
            if let Some(p) = f.priced_as() {
                assert_eq!(p.priced_as(), Some(p.clone()), "{c:?}");
            }
        }
        // Contention's fix warns against more workers: nothing prices it.
        assert_eq!(Fix::for_cause(Cause::CpuContention).priced_as(), None);
        assert_eq!(Fix::for_cause(Cause::WorkerBusy).priced_as(), Some(Fix::MoreWorkers));
        assert_eq!(Fix::for_cause(Cause::IoWait).priced_as(), Some(Fix::MoreWorkers));
        assert_eq!(Fix::SecondLoop(Cause::SyncDrain).priced_as(), Some(Fix::DropSync));
    }

    #[test]
    fn the_loader_wait_of_a_trace_without_os_data_claims_nothing_about_idle_cpus() {
        // A Kineto trace's `loader` hint: the input pipeline's fix, priced as more workers,
        // in words that do not say CPUs were idle (the trace cannot show it).
        for cause in [Cause::HostWait, Cause::HostBusy] {
            let f = Fix::for_gaps(cause, Hint::Loader);
            assert_eq!((f.clone(), f.priced_as()), (Fix::LoaderWait, Some(Fix::MoreWorkers)));
            assert!(f.text().contains("cannot say whether CPUs were free"), "{}", f.text());
            assert!(!f.text().contains("are idle") && !f.text().contains("idle CPUs"), "{}", f.text());
        }
        assert!(Fix::MoreWorkers.text().contains("idle CPUs"), "the nsys fix, which knows the CPUs, keeps them");
    }
}

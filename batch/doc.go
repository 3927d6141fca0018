// Package batch is the runner: it converts many RAW files, each through
// one develop of package pipeline, within a memory budget and the
// machine's cores, and keeps OUTDIR consistent across runs, crashes and
// overlapping runs. The develop of one file (what its outputs look like,
// what it costs) is pipeline's; the runner owns everything around it:
// which files, under which names, whether they need work, when they
// start, on how many threads, in which process, and what is recorded.
//
// A run flows through six steps:
//
//   - plan: walk the inputs and listed files through the filters, and
//     name each file's outputs, resolving collisions stably (PlanBatch,
//     PlanBatchWith, Plan.ResolveNames: plan.go, filter.go, name.go,
//     names_kept.go); read each header and estimate its memory
//     (Plan.Inspect, HeaderReader in helper processes: headerhelper.go).
//   - triage: settle recently modified inputs (Runner.Settle: settle.go),
//     mark what is up to date or must fail before any decode
//     (Runner.Triage, Runner.preflight: batch.go; who wrote an output:
//     outputs.go), and move another photograph's export out of the way
//     (Runner.Relocate: newphoto.go). A dry run stops here and says what
//     the run would do (Runner.DryPlan: dryplan.go, stageplans.go).
//   - admit: largest estimate first, a job slot, the outputs' locks, the
//     up-to-date check again under them, then the memory budget, which
//     decides the file's threads (Runner.Run, admit.go: the one admission
//     rule, Runner.Need); cores freed later raise the threads of the files
//     running (grow.go, workerthreads.go).
//   - execute: an Executor converts the file (executor.go): Subprocess, a
//     worker process per file speaking a versioned wire (local.go,
//     worker.go, WorkerMain), so a crash or hang fails that file only;
//     InProcess for tests and callers that are themselves a worker. Both
//     turn the Job into conversion options through convertJob.
//   - commit: the outputs are renamed into place by the conversion; the
//     runner checks the input did not change meanwhile, settles what a
//     stopped conversion left (committed.go), retries transient
//     failures, and calls the multi-host mode's Fence.
//   - record: an up-to-date record per output (package state), the
//     failures list and the JSON report (report*.go), in OUTDIR's layout
//     (outdir.go; stale temporary files of killed runs: tempclean.go).
//
// The multi-host mode carries a planned task as a queue job (QueuedTask:
// queued.go) and runs it through the same steps on the worker's host.
//
// Errors carry their kind from package internal/rawerr (FailureKind), and
// every failure names its input path.
package batch

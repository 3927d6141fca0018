package pipeline

import "github.com/rawbatch/rawbatch/pipeline/internal/lensfun"

// CloseLensDB destroys the lensfun databases this process loaded for lens
// corrections (loaded once per process and set of --lens-db directories,
// shared by its conversions); a worker process calls it as it exits.
// Errors: a database still in use by a conversion (left loaded).
func CloseLensDB() error { return lensfun.CloseShared() }

package pipeline

// HashParts are the parts of the settings hash of v's options that were
// added after the first up-to-date records were written: none when they
// have their default values, so that the outputs those records describe
// stay up to date.
func (v Variant) HashParts() []string { return v.hashParts() }

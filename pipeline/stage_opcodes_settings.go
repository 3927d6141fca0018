package pipeline

import "fmt"

// OpcodeMode switches the DNG opcode stages (--dng-opcodes).
type OpcodeMode string

const (
	// OpcodesOn applies the opcodes of a DNG's OpcodeList1, 2 and 3 that
	// rawbatch implements (GainMap, FixVignetteRadial, WarpRectilinear)
	// and reports the others as not applied. The default.
	OpcodesOn OpcodeMode = "on"
	// OpcodesOff applies none (every opcode is reported as not applied).
	OpcodesOff OpcodeMode = "off"
)

// OpcodeNames lists the accepted --dng-opcodes values.
const OpcodeNames = "on|off"

// ParseOpcodeMode accepts one of OpcodeNames, case-insensitively.
func ParseOpcodeMode(s string) (OpcodeMode, error) {
	return parseChoice[OpcodeMode]("DNG opcode mode", OpcodeNames, s)
}

// dngOpcodes is s.DNGOpcodes, "" meaning the default (on).
func (s Settings) dngOpcodes() OpcodeMode {
	if s.DNGOpcodes == "" {
		return OpcodesOn
	}
	return s.DNGOpcodes
}

// opcodeParts is the opcode setting as a string for the stage cache key
// and the settings hash (rawsideParts): OpcodeList1/2 change the CFA data
// before the demosaic, so the cached image depends on it.
func (s Settings) opcodeParts() []string {
	return []string{"dng-opcodes=" + string(s.dngOpcodes())}
}

func (s Settings) validateOpcodes() error {
	if m := s.dngOpcodes(); m != OpcodesOn && m != OpcodesOff {
		return fmt.Errorf("unknown DNG opcode mode %q (want %s)", s.DNGOpcodes, wantList(OpcodeNames))
	}
	return nil
}

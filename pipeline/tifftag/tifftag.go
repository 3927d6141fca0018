// Package tifftag is rawbatch's one table of TIFF tags: the numbers, names,
// usual field types and directories of the tags that its header reader
// (pipeline/header), its TIFF and EXIF writers (pipeline/encode) and its
// test-file writer (pipeline/synthdng) use, and the TIFF field types with
// their sizes in bytes.
//
// Tag and type numbers are untyped constants, so they fit the uint16 of an
// IFD entry without conversion. Tags lists every tag constant with its name
// and directory (a test checks that the two agree and that no directory
// has a number twice). Sources, named per group below: TIFF 6.0 (Adobe,
// 1992), TIFF/EP (ISO 12234-2:2001), Exif 2.32 (CIPA DC-008-2019), DNG
// 1.7.1.0 (Adobe, 2023), ICC.1:2010, Adobe's TIFF Technical Note 1 (SubIFDs)
// and, for the makers' private directories, ExifTool's tag tables (the
// only public description of them).
package tifftag

// Field types (TIFF 6.0 §2 "IFD Entry" types 1..12; type 13, IFD, from
// Adobe's TIFF Technical Note 1, also in Exif 2.32 §4.6.2 as a LONG
// offset).
const (
	TypeByte      = 1  // 8-bit unsigned integer
	TypeASCII     = 2  // 8-bit bytes of 7-bit ASCII, the last one NUL
	TypeShort     = 3  // 16-bit unsigned integer
	TypeLong      = 4  // 32-bit unsigned integer
	TypeRational  = 5  // two LONGs: numerator, denominator
	TypeSByte     = 6  // 8-bit signed integer
	TypeUndefined = 7  // 8-bit bytes, meaning given by the tag
	TypeSShort    = 8  // 16-bit signed integer
	TypeSLong     = 9  // 32-bit signed integer
	TypeSRational = 10 // two SLONGs: numerator, denominator
	TypeFloat     = 11 // IEEE 754 binary32
	TypeDouble    = 12 // IEEE 754 binary64
	TypeIFD       = 13 // 32-bit offset of a sub-IFD
)

// TypeSize returns the size in bytes of one value of field type typ
// (1, 2, 4 or 8), or 0 for a type TIFF does not define (0, 14 and above):
// readers must skip an entry of unknown type (TIFF 6.0 §2).
func TypeSize(typ uint16) int {
	switch typ {
	case TypeByte, TypeASCII, TypeSByte, TypeUndefined:
		return 1
	case TypeShort, TypeSShort:
		return 2
	case TypeLong, TypeSLong, TypeFloat, TypeIFD:
		return 4
	case TypeRational, TypeSRational, TypeDouble:
		return 8
	}
	return 0
}

// Entry is one tag of a file with its value, as the header reader reads it
// and the EXIF writer copies it: its directory (DirImage for IFD0,
// DirExif, DirGPS), number, TIFF field type and value bytes in big-endian
// order (the count is len(Value) / TypeSize(Type)).
type Entry struct {
	Dir   Dir
	ID    uint16
	Type  uint16
	Value []byte
}

// Dir is the kind of IFD a tag belongs to: tag numbers are unique within
// one kind only (the makers' directories reuse small numbers).
type Dir uint8

const (
	// DirImage: IFD0 and the other image IFDs of TIFF, TIFF/EP and DNG
	// (SubIFDs, the raw IFD).
	DirImage Dir = iota
	// DirExif: the Exif IFD (Exif 2.32 §4.6.3 "Exif IFD").
	DirExif
	// DirPanasonicRaw: IFD0 of a Panasonic RW2 file (ExifTool PanasonicRaw).
	DirPanasonicRaw
	// DirCanonMakerNote: the IFD of a Canon maker note (ExifTool Canon).
	DirCanonMakerNote
	// DirNikonMakerNote: the IFD of a Nikon type-3 maker note (ExifTool
	// Nikon).
	DirNikonMakerNote
	// DirGPS: the GPS IFD (Exif 2.32 §4.6.6 "GPS Attribute Information").
	DirGPS
)

// TIFF 6.0 (§8 baseline fields, §14 Predictor, §15 tiles), and SubIFDs
// (Adobe TIFF Technical Note 1, 1993). Directory: DirImage.
const (
	NewSubFileType            = 254
	ImageWidth                = 256
	ImageLength               = 257
	BitsPerSample             = 258
	Compression               = 259
	PhotometricInterpretation = 262
	Make                      = 271
	Model                     = 272
	StripOffsets              = 273
	Orientation               = 274
	SamplesPerPixel           = 277
	RowsPerStrip              = 278
	StripByteCounts           = 279
	XResolution               = 282
	YResolution               = 283
	PlanarConfiguration       = 284
	ResolutionUnit            = 296
	Software                  = 305
	DateTime                  = 306
	Artist                    = 315
	Predictor                 = 317
	TileWidth                 = 322
	TileLength                = 323
	TileOffsets               = 324
	TileByteCounts            = 325
	SubIFDs                   = 330
	// XMLPacket holds an XMP packet (XMP Specification Part 3 §1.1.5:
	// TIFF tag 700, BYTE or UNDEFINED).
	XMLPacket = 700
	// Copyright (TIFF 6.0 §8) and Rating (Microsoft's 0–5 stars, as
	// ExifTool names it) are IFD0 attributes outputs copy.
	Rating    = 18246
	Copyright = 33432
)

// TIFF/EP (ISO 12234-2:2001: the CFA tags of the raw IFD), the Exif and
// GPS IFD pointers (Exif 2.32 §4.6.3) and the embedded ICC profile
// (ICC.1:2010 Annex B.5). Directory: DirImage.
const (
	CFARepeatPatternDim = 33421
	CFAPattern          = 33422
	ExifIFD             = 34665
	InterColorProfile   = 34675
	GPSIFD              = 34853
)

// DNG 1.7.1.0 (its chapter "DNG Tags"; numbers 50706 and above).
// Directory: DirImage.
const (
	DNGVersion             = 50706
	DNGBackwardVersion     = 50707
	UniqueCameraModel      = 50708
	BlackLevel             = 50714
	WhiteLevel             = 50717
	DefaultCropOrigin      = 50719
	DefaultCropSize        = 50720
	ColorMatrix1           = 50721
	AnalogBalance          = 50727
	AsShotNeutral          = 50728
	BaselineExposure       = 50730
	CalibrationIlluminant1 = 50778
	ActiveArea             = 50829
	// ProfileToneCurve (FLOAT x, y pairs) and BaselineExposureOffset
	// (SRATIONAL, EV): DNG 1.6 §6.2, read by pipeline/header for the look.
	ProfileToneCurve       = 50940
	BaselineExposureOffset = 51109
	// OpcodeList1, 2 and 3 (UNDEFINED, big-endian lists of the raw IFD):
	// DNG 1.3+ §6, read by pipeline/header for pipeline/dngopcode.
	OpcodeList1 = 51008
	OpcodeList2 = 51009
	OpcodeList3 = 51022
)

// Sony ARW: the raw IFD's SonyRawFileType (0x7000; ExifTool Sony tags:
// 0 and 1 uncompressed 14 and 12 bit, 2 compressed, 3 and 4 lossless).
// Directory: DirImage.
const SonyRawFileType = 0x7000

// Exif 2.32 (CIPA DC-008-2019 §4.6.5, the attributes of the Exif IFD).
// Directory: DirExif. PhotographicSensitivity is ISOSpeedRatings before
// Exif 2.3.
const (
	ExposureTime            = 33434
	FNumber                 = 33437
	PhotographicSensitivity = 34855
	SensitivityType         = 34864
	ISOSpeed                = 34867
	ExifVersion             = 36864
	DateTimeOriginal        = 36867
	DateTimeDigitized       = 36868
	OffsetTime              = 36880
	OffsetTimeOriginal      = 36881
	OffsetTimeDigitized     = 36882
	FocalLength             = 37386
	MakerNote               = 37500
	SubSecTime              = 37520
	SubSecTimeOriginal      = 37521
	SubSecTimeDigitized     = 37522
	InteropIFD              = 40965
	LensModel               = 42036
)

// Panasonic RW2 IFD0 (ExifTool PanasonicRaw tags): the sensor size and the
// borders of its image area, in pixels. Directory: DirPanasonicRaw.
const (
	PanasonicSensorWidth  = 0x02
	PanasonicSensorHeight = 0x03
	PanasonicTopBorder    = 0x04
	PanasonicLeftBorder   = 0x05
	PanasonicBottomBorder = 0x06
	PanasonicRightBorder  = 0x07
	// PanasonicJpgFromRaw: the embedded JPEG, whose Exif block holds the
	// standard EXIF of an RW2.
	PanasonicJpgFromRaw = 0x2e
)

// Canon maker note (ExifTool Canon tags): LensModel (ASCII) and SensorInfo
// (int16u[17]: sensor size and image borders). Directory:
// DirCanonMakerNote.
const (
	CanonLensModel  = 0x0095
	CanonSensorInfo = 0x00e0
)

// Nikon type-3 maker note (ExifTool Nikon tags): Lens (4 RATIONALs:
// focal range and apertures). Directory: DirNikonMakerNote.
const NikonLens = 0x0084

// Def describes one tag of the table.
type Def struct {
	Number uint16
	Name   string // as the specification writes it, and as its constant is named
	Dir    Dir
}

// Tags is the table: every tag constant of this package, by directory.
var Tags = []Def{
	{NewSubFileType, "NewSubFileType", DirImage},
	{ImageWidth, "ImageWidth", DirImage},
	{ImageLength, "ImageLength", DirImage},
	{BitsPerSample, "BitsPerSample", DirImage},
	{Compression, "Compression", DirImage},
	{PhotometricInterpretation, "PhotometricInterpretation", DirImage},
	{Make, "Make", DirImage},
	{Model, "Model", DirImage},
	{StripOffsets, "StripOffsets", DirImage},
	{Orientation, "Orientation", DirImage},
	{SamplesPerPixel, "SamplesPerPixel", DirImage},
	{RowsPerStrip, "RowsPerStrip", DirImage},
	{StripByteCounts, "StripByteCounts", DirImage},
	{XResolution, "XResolution", DirImage},
	{YResolution, "YResolution", DirImage},
	{PlanarConfiguration, "PlanarConfiguration", DirImage},
	{ResolutionUnit, "ResolutionUnit", DirImage},
	{Software, "Software", DirImage},
	{DateTime, "DateTime", DirImage},
	{Predictor, "Predictor", DirImage},
	{TileWidth, "TileWidth", DirImage},
	{TileLength, "TileLength", DirImage},
	{TileOffsets, "TileOffsets", DirImage},
	{TileByteCounts, "TileByteCounts", DirImage},
	{SubIFDs, "SubIFDs", DirImage},
	{Artist, "Artist", DirImage},
	{XMLPacket, "XMLPacket", DirImage},
	{Rating, "Rating", DirImage},
	{Copyright, "Copyright", DirImage},
	{CFARepeatPatternDim, "CFARepeatPatternDim", DirImage},
	{CFAPattern, "CFAPattern", DirImage},
	{ExifIFD, "ExifIFD", DirImage},
	{InterColorProfile, "InterColorProfile", DirImage},
	{GPSIFD, "GPSIFD", DirImage},
	{DNGVersion, "DNGVersion", DirImage},
	{DNGBackwardVersion, "DNGBackwardVersion", DirImage},
	{UniqueCameraModel, "UniqueCameraModel", DirImage},
	{BlackLevel, "BlackLevel", DirImage},
	{WhiteLevel, "WhiteLevel", DirImage},
	{DefaultCropOrigin, "DefaultCropOrigin", DirImage},
	{DefaultCropSize, "DefaultCropSize", DirImage},
	{ColorMatrix1, "ColorMatrix1", DirImage},
	{AnalogBalance, "AnalogBalance", DirImage},
	{AsShotNeutral, "AsShotNeutral", DirImage},
	{BaselineExposure, "BaselineExposure", DirImage},
	{CalibrationIlluminant1, "CalibrationIlluminant1", DirImage},
	{ActiveArea, "ActiveArea", DirImage},
	{ProfileToneCurve, "ProfileToneCurve", DirImage},
	{BaselineExposureOffset, "BaselineExposureOffset", DirImage},
	{OpcodeList1, "OpcodeList1", DirImage},
	{OpcodeList2, "OpcodeList2", DirImage},
	{OpcodeList3, "OpcodeList3", DirImage},
	{SonyRawFileType, "SonyRawFileType", DirImage},

	{ExposureTime, "ExposureTime", DirExif},
	{FNumber, "FNumber", DirExif},
	{PhotographicSensitivity, "PhotographicSensitivity", DirExif},
	{SensitivityType, "SensitivityType", DirExif},
	{ISOSpeed, "ISOSpeed", DirExif},
	{ExifVersion, "ExifVersion", DirExif},
	{DateTimeOriginal, "DateTimeOriginal", DirExif},
	{DateTimeDigitized, "DateTimeDigitized", DirExif},
	{OffsetTime, "OffsetTime", DirExif},
	{OffsetTimeOriginal, "OffsetTimeOriginal", DirExif},
	{OffsetTimeDigitized, "OffsetTimeDigitized", DirExif},
	{FocalLength, "FocalLength", DirExif},
	{MakerNote, "MakerNote", DirExif},
	{SubSecTime, "SubSecTime", DirExif},
	{SubSecTimeOriginal, "SubSecTimeOriginal", DirExif},
	{SubSecTimeDigitized, "SubSecTimeDigitized", DirExif},
	{InteropIFD, "InteropIFD", DirExif},
	{LensModel, "LensModel", DirExif},

	{PanasonicSensorWidth, "PanasonicSensorWidth", DirPanasonicRaw},
	{PanasonicSensorHeight, "PanasonicSensorHeight", DirPanasonicRaw},
	{PanasonicTopBorder, "PanasonicTopBorder", DirPanasonicRaw},
	{PanasonicLeftBorder, "PanasonicLeftBorder", DirPanasonicRaw},
	{PanasonicBottomBorder, "PanasonicBottomBorder", DirPanasonicRaw},
	{PanasonicRightBorder, "PanasonicRightBorder", DirPanasonicRaw},
	{PanasonicJpgFromRaw, "PanasonicJpgFromRaw", DirPanasonicRaw},

	{CanonLensModel, "CanonLensModel", DirCanonMakerNote},
	{CanonSensorInfo, "CanonSensorInfo", DirCanonMakerNote},

	{NikonLens, "NikonLens", DirNikonMakerNote},
}

// Name returns the name of tag number n in directory d, or "" when the
// table does not hold it.
func Name(d Dir, n uint16) string {
	for _, t := range Tags {
		if t.Dir == d && t.Number == n {
			return t.Name
		}
	}
	return ""
}

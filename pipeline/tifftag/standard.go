package tifftag

// Standard lists the standard tags that describe a photograph rather than
// the structure of the file holding it: what rawbatch copies from a raw
// file into its outputs. Sources: Exif 2.32 (CIPA DC-008-2019) Table 4
// (the TIFF attributes of IFD0 it keeps: ImageDescription, Make, Model,
// Orientation, Software, DateTime, Artist, Copyright, plus Microsoft's
// Rating), §4.6.5 (the Exif IFD attributes) and §4.6.6 (every GPS
// attribute, 0–31).
//
// Left out on purpose (docs/metadata.md): everything about the raw's own
// image structure (sizes, bits, compression, strips, tiles, resolution,
// YCbCr, CFA and DNG tags, SubIFDs, PixelX/YDimension,
// ComponentsConfiguration, CompressedBitsPerPixel), the attributes counted
// in the raw's pixels, wrong for an output of another size or crop
// (FocalPlaneX/YResolution and their unit, from which readers derive a
// 35 mm equivalent; SubjectArea, SubjectLocation), colour descriptions that
// the output's ICC profile replaces (ColorSpace, Gamma, WhitePoint,
// PrimaryChromaticities, TransferFunction, the Interoperability IFD),
// ExifVersion (the writer states its own), the MakerNote (its internal
// offsets point into the raw file and break when moved), and the three
// Exif attributes whose UNDEFINED value holds numbers in the file's byte
// order (OECF, SpatialFrequencyResponse, DeviceSettingDescription).
var Standard = []Def{
	{270, "ImageDescription", DirImage},
	{Make, "Make", DirImage},
	{Model, "Model", DirImage},
	{Orientation, "Orientation", DirImage},
	{Software, "Software", DirImage},
	{DateTime, "DateTime", DirImage},
	{Artist, "Artist", DirImage},
	{Rating, "Rating", DirImage},
	{Copyright, "Copyright", DirImage},

	{ExposureTime, "ExposureTime", DirExif},
	{FNumber, "FNumber", DirExif},
	{34850, "ExposureProgram", DirExif},
	{34852, "SpectralSensitivity", DirExif},
	{PhotographicSensitivity, "PhotographicSensitivity", DirExif},
	{SensitivityType, "SensitivityType", DirExif},
	{34865, "StandardOutputSensitivity", DirExif},
	{34866, "RecommendedExposureIndex", DirExif},
	{ISOSpeed, "ISOSpeed", DirExif},
	{34868, "ISOSpeedLatitudeyyy", DirExif},
	{34869, "ISOSpeedLatitudezzz", DirExif},
	{DateTimeOriginal, "DateTimeOriginal", DirExif},
	{DateTimeDigitized, "DateTimeDigitized", DirExif},
	{OffsetTime, "OffsetTime", DirExif},
	{OffsetTimeOriginal, "OffsetTimeOriginal", DirExif},
	{OffsetTimeDigitized, "OffsetTimeDigitized", DirExif},
	{37377, "ShutterSpeedValue", DirExif},
	{37378, "ApertureValue", DirExif},
	{37379, "BrightnessValue", DirExif},
	{37380, "ExposureBiasValue", DirExif},
	{37381, "MaxApertureValue", DirExif},
	{37382, "SubjectDistance", DirExif},
	{37383, "MeteringMode", DirExif},
	{37384, "LightSource", DirExif},
	{37385, "Flash", DirExif},
	{FocalLength, "FocalLength", DirExif},
	{37510, "UserComment", DirExif},
	{SubSecTime, "SubSecTime", DirExif},
	{SubSecTimeOriginal, "SubSecTimeOriginal", DirExif},
	{SubSecTimeDigitized, "SubSecTimeDigitized", DirExif},
	{37888, "Temperature", DirExif},
	{37889, "Humidity", DirExif},
	{37890, "Pressure", DirExif},
	{37891, "WaterDepth", DirExif},
	{37892, "Acceleration", DirExif},
	{37893, "CameraElevationAngle", DirExif},
	{40960, "FlashpixVersion", DirExif},
	{40964, "RelatedSoundFile", DirExif},
	{41483, "FlashEnergy", DirExif},
	{41493, "ExposureIndex", DirExif},
	{41495, "SensingMethod", DirExif},
	{41728, "FileSource", DirExif},
	{41729, "SceneType", DirExif},
	{41985, "CustomRendered", DirExif},
	{41986, "ExposureMode", DirExif},
	{41987, "WhiteBalance", DirExif},
	{41988, "DigitalZoomRatio", DirExif},
	{41989, "FocalLengthIn35mmFilm", DirExif},
	{41990, "SceneCaptureType", DirExif},
	{41991, "GainControl", DirExif},
	{41992, "Contrast", DirExif},
	{41993, "Saturation", DirExif},
	{41994, "Sharpness", DirExif},
	{41996, "SubjectDistanceRange", DirExif},
	{42016, "ImageUniqueID", DirExif},
	{42032, "CameraOwnerName", DirExif},
	{42033, "BodySerialNumber", DirExif},
	{42034, "LensSpecification", DirExif},
	{42035, "LensMake", DirExif},
	{LensModel, "LensModel", DirExif},
	{42037, "LensSerialNumber", DirExif},
	{42080, "CompositeImage", DirExif},
	{42081, "SourceImageNumberOfCompositeImage", DirExif},
	{42082, "SourceExposureTimesOfCompositeImage", DirExif},

	{0, "GPSVersionID", DirGPS},
	{1, "GPSLatitudeRef", DirGPS},
	{2, "GPSLatitude", DirGPS},
	{3, "GPSLongitudeRef", DirGPS},
	{4, "GPSLongitude", DirGPS},
	{5, "GPSAltitudeRef", DirGPS},
	{6, "GPSAltitude", DirGPS},
	{7, "GPSTimeStamp", DirGPS},
	{8, "GPSSatellites", DirGPS},
	{9, "GPSStatus", DirGPS},
	{10, "GPSMeasureMode", DirGPS},
	{11, "GPSDOP", DirGPS},
	{12, "GPSSpeedRef", DirGPS},
	{13, "GPSSpeed", DirGPS},
	{14, "GPSTrackRef", DirGPS},
	{15, "GPSTrack", DirGPS},
	{16, "GPSImgDirectionRef", DirGPS},
	{17, "GPSImgDirection", DirGPS},
	{18, "GPSMapDatum", DirGPS},
	{19, "GPSDestLatitudeRef", DirGPS},
	{20, "GPSDestLatitude", DirGPS},
	{21, "GPSDestLongitudeRef", DirGPS},
	{22, "GPSDestLongitude", DirGPS},
	{23, "GPSDestBearingRef", DirGPS},
	{24, "GPSDestBearing", DirGPS},
	{25, "GPSDestDistanceRef", DirGPS},
	{26, "GPSDestDistance", DirGPS},
	{27, "GPSProcessingMethod", DirGPS},
	{28, "GPSAreaInformation", DirGPS},
	{29, "GPSDateStamp", DirGPS},
	{30, "GPSDifferential", DirGPS},
	{31, "GPSHPositioningError", DirGPS},
}

// IsStandard reports whether tag n of directory d (DirImage for IFD0,
// DirExif, DirGPS) is in Standard.
func IsStandard(d Dir, n uint16) bool {
	for _, t := range Standard {
		if t.Dir == d && t.Number == n {
			return true
		}
	}
	return false
}

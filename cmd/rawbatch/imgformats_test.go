package main

// The imgsize script command decodes TIFF outputs too (image.DecodeConfig
// through x/image/tiff, which reads LZW and Deflate).
import _ "golang.org/x/image/tiff"

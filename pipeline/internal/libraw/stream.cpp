// stream.cpp: rb_stream is LibRaw's FILE*-based datastream plus a count of
// reads that hit the end of the file. Several LibRaw decoders (lossless
// JPEG, Panasonic, ...) treat end-of-file as zero bits and return success on
// a truncated file; a decode that keeps reading past the end is truncated.
#include <new>
#include <cstdio>
#include "rb_libraw.h"

// RB_MAX_EOF_READS bounds the reads past the end of the file in one open or
// unpack. Some of LibRaw 0.20's parsers loop forever on a truncated file
// (exiftool_PhaseOne.iiq cut to 1700-2000 bytes hangs libraw_open_file),
// reading at end of file each time; past this many such reads the stream
// throws LibRaw's end-of-file exception, which LibRaw's API calls catch and
// return as LIBRAW_IO_ERROR. Complete files make none or one.
#define RB_MAX_EOF_READS (1 << 18)

class rb_stream : public LibRaw_bigfile_datastream {
public:
	long long eof_reads;
	explicit rb_stream(const char *path) : LibRaw_bigfile_datastream(path), eof_reads(0) {}
	virtual int read(void *ptr, size_t size, size_t nmemb) {
		int r = LibRaw_bigfile_datastream::read(ptr, size, nmemb);
		if (r >= 0 && (size_t)r < nmemb) hit_eof();
		return r;
	}
	virtual int get_char() {
		int c = LibRaw_bigfile_datastream::get_char();
		if (c == EOF) hit_eof();
		return c;
	}

private:
	void hit_eof() {
		if (++eof_reads > RB_MAX_EOF_READS) throw LIBRAW_EXCEPTION_IO_EOF;
	}
};

extern "C" void *rb_stream_new(const char *path) {
	rb_stream *s = new (std::nothrow) rb_stream(path);
	if (s != NULL && !s->valid()) {
		delete s;
		return NULL;
	}
	return s;
}

extern "C" int rb_stream_open(libraw_data_t *lr, void *stream) {
	LibRaw *ip = static_cast<LibRaw *>(lr->parent_class);
	return ip->open_datastream(static_cast<rb_stream *>(stream));
}

extern "C" long long rb_stream_eof_reads(void *stream) { return static_cast<rb_stream *>(stream)->eof_reads; }

extern "C" void rb_stream_reset(void *stream) { static_cast<rb_stream *>(stream)->eof_reads = 0; }

extern "C" void rb_stream_free(void *stream) { delete static_cast<rb_stream *>(stream); }

// stream.cpp: rb_stream is LibRaw's FILE*-based datastream plus a count of
// reads that hit the end of the file. Several LibRaw decoders (lossless
// JPEG, Panasonic, ...) treat end-of-file as zero bits and return success on
// a truncated file; a decode that keeps reading past the end is truncated.
#include <new>
#include <cstdio>
#include "stream.h"

class rb_stream : public LibRaw_bigfile_datastream {
public:
	long long eof_reads;
	explicit rb_stream(const char *path) : LibRaw_bigfile_datastream(path), eof_reads(0) {}
	virtual int read(void *ptr, size_t size, size_t nmemb) {
		int r = LibRaw_bigfile_datastream::read(ptr, size, nmemb);
		if (r >= 0 && (size_t)r < nmemb) eof_reads++;
		return r;
	}
	virtual int get_char() {
		int c = LibRaw_bigfile_datastream::get_char();
		if (c == EOF) eof_reads++;
		return c;
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

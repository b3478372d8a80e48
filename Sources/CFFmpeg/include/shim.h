#ifndef STORIES_CFFMPEG_SHIM_H
#define STORIES_CFFMPEG_SHIM_H

// FFmpeg 5.1's demuxer, decoders, scaler, resampler and filters (Debian: libavformat-dev libavcodec-dev
// libswscale-dev libavutil-dev libavfilter-dev libswresample-dev).
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavcodec/avcodec.h>
#include <libswscale/swscale.h>
#include <libavutil/avutil.h>
#include <libavutil/imgutils.h>
#include <libavutil/error.h>
#include <libavutil/log.h>
#include <libavutil/display.h>
#include <libavutil/dict.h>
#include <libavutil/pixdesc.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersrc.h>
#include <libavfilter/buffersink.h>
#include <libswresample/swresample.h>
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
#include <errno.h>

// The libraries are not linked: they are loaded the first time a picture is decoded (see loader.c), so commands
// that show no picture (fetch, cache, serve) do not pay for loading FFmpeg's hundred-odd dependencies at start-up.
// Returns 1 when every function this program uses was found; otherwise 0, with why in `error`.
int stories_ffmpeg_load(char *error, size_t size);

// Loads the decoders and scalers only (libavutil, libswscale, libswresample, libavcodec), not the demuxers: enough
// to decode a picture whose bytes are at hand. 1 when their functions were found, else 0 with why in `error`.
int stories_ffmpeg_load_codecs(char *error, size_t size);

// Starts loading the decoding libraries on a thread of its own and returns at once: a program that will decode
// soon calls it at launch, so the load overlaps its other start-up work.
void stories_ffmpeg_load_soon(void);

// Loads libavfilter too (only tone-mapping needs it); 1 when its functions were found, else 0 with why in `error`.
int stories_ffmpeg_load_filters(char *error, size_t size);

// A resampler from `frame`'s samples (any layout, format and rate) to interleaved signed 16-bit at `rate` with
// `channels` channels; NULL when libswresample refuses the conversion.
struct SwrContext *stories_resampler_open(const AVFrame *frame, int rate, int channels);

// Converts `frame` with `resampler` into `out` (room for `out_frames` frames); the frames written, or a negative
// error code.
int stories_resample(struct SwrContext *resampler, const AVFrame *frame, int16_t *out, int out_frames);

// Function-like macros Swift cannot import.
static inline int stories_averror_eof(void) { return AVERROR_EOF; }
static inline int stories_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int stories_averror_eio(void) { return AVERROR(EIO); }
static inline int stories_averror_exit(void) { return AVERROR_EXIT; }
static inline int stories_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int stories_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int stories_avseek_size(void) { return AVSEEK_SIZE; }
static inline int stories_avseek_force(void) { return AVSEEK_FORCE; }
static inline int64_t stories_av_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline int stories_av_log_quiet(void) { return AV_LOG_QUIET; }
static inline int stories_ff_thread_frame_slice(void) { return FF_THREAD_FRAME | FF_THREAD_SLICE; }
static inline int stories_sws_cs_default(void) { return SWS_CS_DEFAULT; }

#endif

// FFmpeg's functions this program calls, each a stub that loads the library on first use and forwards to it.
// Linking FFmpeg directly would load it and its dependencies (x264, x265, gnutls, glib, ... 130 libraries) into
// every command at start-up, some 65 ms, for the one command that shows pictures. Even loaded on demand they cost
// a story's first frame 40-80 ms (Debian builds each library to be bound at once), so `play` starts the load on a
// thread of its own at launch, beside opening the cache; libavfilter (another 25-35 ms, needed only to tone-map
// HDR video) is loaded apart, the first time a filter is asked for.

#include "shim.h"
#include "library_order.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

#define STORIES_STR2(x) #x
#define STORIES_STR(x) STORIES_STR2(x)
#define LIB_AVFORMAT "libavformat.so." STORIES_STR(LIBAVFORMAT_VERSION_MAJOR)
#define LIB_AVCODEC "libavcodec.so." STORIES_STR(LIBAVCODEC_VERSION_MAJOR)
#define LIB_SWSCALE "libswscale.so." STORIES_STR(LIBSWSCALE_VERSION_MAJOR)
#define LIB_AVUTIL "libavutil.so." STORIES_STR(LIBAVUTIL_VERSION_MAJOR)
#define LIB_AVFILTER "libavfilter.so." STORIES_STR(LIBAVFILTER_VERSION_MAJOR)
#define LIB_SWRESAMPLE "libswresample.so." STORIES_STR(LIBSWRESAMPLE_VERSION_MAJOR)

// The decoders and scalers, then the demuxers (libavformat brings 37 more objects, some 20 ms: a picture whose
// bytes are already at hand decodes without it), then (loaded apart) the filters.
static const char *const library_names[] = {
    LIB_AVUTIL, LIB_SWSCALE, LIB_SWRESAMPLE, LIB_AVCODEC, LIB_AVFORMAT, LIB_AVFILTER};
#define LIBRARY_COUNT 6
#define CODEC_COUNT 4
#define CORE_COUNT 5
static void *libraries[LIBRARY_COUNT];
static char codec_error[512];
static char load_error[512];
static char filter_error[512];
static int codecs_loaded;
static int loaded;
static int filters_loaded;
static pthread_once_t codec_once = PTHREAD_ONCE_INIT;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_once_t filter_once = PTHREAD_ONCE_INIT;

static void *symbol(const char *name) {
    for (int i = 0; i < LIBRARY_COUNT; i++) {
        void *library = __atomic_load_n(&libraries[i], __ATOMIC_ACQUIRE);
        if (library) {
            void *found = dlsym(library, name);
            if (found) return found;
        }
    }
    return NULL;
}

static const char *const required_codecs[] = {
    "av_frame_alloc", "av_frame_free", "av_frame_move_ref", "av_frame_unref", "av_free", "av_freep",
    "av_log_set_level", "av_malloc", "av_mallocz", "av_packet_alloc", "av_packet_free", "av_packet_unref",
    "av_new_packet", "av_strerror", "avcodec_alloc_context3", "avcodec_flush_buffers", "avcodec_free_context",
    "avcodec_open2", "avcodec_parameters_to_context", "avcodec_receive_frame", "avcodec_send_packet", "sws_scale",
    "sws_getCachedContext", "sws_freeContext", "sws_setColorspaceDetails", "sws_getCoefficients",
    "av_frame_get_side_data", "av_dict_get", "av_get_pix_fmt_name", "av_strdup", "swr_alloc_set_opts2", "swr_init",
    "swr_convert", "swr_free", "swr_get_delay", "av_channel_layout_default", "av_channel_layout_uninit",
    "av_packet_move_ref", "avcodec_find_decoder", "avcodec_decode_subtitle2", "avsubtitle_free",
};

static const char *const required[] = {
    "av_find_best_stream", "av_read_frame", "av_seek_frame", "avformat_alloc_context", "avformat_close_input",
    "avformat_find_stream_info", "avformat_free_context", "avformat_open_input", "avio_alloc_context",
    "avio_context_free", "av_stream_get_side_data",
};

static const char *const required_filters[] = {
    "avfilter_graph_alloc", "avfilter_graph_free", "avfilter_get_by_name", "avfilter_graph_create_filter",
    "avfilter_graph_parse_ptr", "avfilter_inout_alloc", "avfilter_inout_free", "avfilter_graph_config",
    "av_buffersrc_add_frame_flags", "av_buffersink_get_frame",
};

// Loads libraries[first..<end] (dependencies first, see library_order.c) and checks that `names` are all there;
// 1 when they are, else 0 with why in `error`.
static int load_libraries(int first, int end, const char *const *names, size_t count, char *error, size_t size) {
    for (int i = first; i < end; i++) {
        stories_load_in_order(library_names[i], RTLD_NOW | RTLD_LOCAL);
        void *library = dlopen(library_names[i], RTLD_NOW | RTLD_LOCAL);
        if (!library) {
            snprintf(error, size, "cannot load %s (%s)", library_names[i], dlerror());
            return 0;
        }
        __atomic_store_n(&libraries[i], library, __ATOMIC_RELEASE);
    }
    for (size_t i = 0; i < count; i++) {
        if (!symbol(names[i])) {
            snprintf(error, size, "FFmpeg's libraries lack %s", names[i]);
            return 0;
        }
    }
    return 1;
}

// Loads running now. The end of the process runs the libraries' destructors: a library still running its
// constructors on another thread then fails (GnuTLS prints "Error in GnuTLS initialization"), so the end waits.
static int loads_in_progress;
static pthread_once_t settle_once = PTHREAD_ONCE_INIT;

static void settle_before_exit(void) {
    // (A load takes well under a second; the wait is bounded all the same.)
    for (int i = 0; i < 2000 && __atomic_load_n(&loads_in_progress, __ATOMIC_ACQUIRE) > 0; i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
}

static void register_settle(void) { (void)atexit(settle_before_exit); }

static void begin_load(void) {
    pthread_once(&settle_once, register_settle);
    __atomic_add_fetch(&loads_in_progress, 1, __ATOMIC_ACQ_REL);
}

static void end_load(void) { __atomic_sub_fetch(&loads_in_progress, 1, __ATOMIC_ACQ_REL); }

static void load_codecs(void) {
    begin_load();
    codecs_loaded = load_libraries(
        0, CODEC_COUNT, required_codecs, sizeof required_codecs / sizeof required_codecs[0], codec_error,
        sizeof codec_error);
    end_load();
}

static void load(void) {
    pthread_once(&codec_once, load_codecs);
    if (!codecs_loaded) {
        snprintf(load_error, sizeof load_error, "%s", codec_error);
        return;
    }
    begin_load();
    loaded = load_libraries(
        CODEC_COUNT, CORE_COUNT, required, sizeof required / sizeof required[0], load_error, sizeof load_error);
    end_load();
}

static void load_filters(void) {
    pthread_once(&load_once, load);
    if (!loaded) {
        snprintf(filter_error, sizeof filter_error, "%s", load_error);
        return;
    }
    begin_load();
    filters_loaded = load_libraries(
        CORE_COUNT, LIBRARY_COUNT, required_filters, sizeof required_filters / sizeof required_filters[0], filter_error,
        sizeof filter_error);
    end_load();
}

int stories_ffmpeg_load_codecs(char *error, size_t size) {
    pthread_once(&codec_once, load_codecs);
    if (!codecs_loaded && error && size > 0) snprintf(error, size, "%s", codec_error);
    return codecs_loaded;
}

int stories_ffmpeg_load(char *error, size_t size) {
    pthread_once(&load_once, load);
    if (!loaded && error && size > 0) snprintf(error, size, "%s", load_error);
    return loaded;
}

int stories_ffmpeg_load_filters(char *error, size_t size) {
    pthread_once(&filter_once, load_filters);
    if (!filters_loaded && error && size > 0) snprintf(error, size, "%s", filter_error);
    return filters_loaded;
}

static void *load_in_background(void *unused) {
    (void)unused;
    pthread_once(&load_once, load);
    end_load();
    return NULL;
}

void stories_ffmpeg_load_soon(void) {
    pthread_t thread;
    pthread_attr_t attributes;
    // Counted from here, before the thread starts: the process may end before the thread reaches the load.
    begin_load();
    if (pthread_attr_init(&attributes) != 0) {
        end_load();
        return;
    }
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    // Whoever needs the libraries first waits on the same once; a thread that cannot start leaves the load to them.
    if (pthread_create(&thread, &attributes, load_in_background, NULL) != 0) end_load();
    pthread_attr_destroy(&attributes);
}

// Each stub resolves its function once, after `LOADER` ran once under `ONCE`: the decoders and scalers, for the
// format stubs libavformat too (callers check first with stories_ffmpeg_load_codecs or stories_ffmpeg_load), or
// for the filter stubs libavfilter too (loaded the first time one is called).
#define RESOLVE(NAME, TYPE, ONCE, LOADER)                                                                    \
    static TYPE real;                                                                                         \
    TYPE f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);                                                       \
    if (!f) {                                                                                                 \
        pthread_once(&ONCE, LOADER);                                                                          \
        f = (TYPE)symbol(#NAME);                                                                              \
        __atomic_store_n(&real, f, __ATOMIC_RELEASE);                                                        \
    }

#define STUB_IN(ONCE, LOADER, RET, NAME, PARAMS, ARGS)                                                        \
    RET NAME PARAMS {                                                                                         \
        typedef RET(*fn_t) PARAMS;                                                                            \
        RESOLVE(NAME, fn_t, ONCE, LOADER)                                                                     \
        return f ARGS;                                                                                        \
    }

#define STUB_VOID_IN(ONCE, LOADER, NAME, PARAMS, ARGS)                                                        \
    void NAME PARAMS {                                                                                        \
        typedef void(*fn_t) PARAMS;                                                                           \
        RESOLVE(NAME, fn_t, ONCE, LOADER)                                                                     \
        f ARGS;                                                                                               \
    }

#define STUB(RET, NAME, PARAMS, ARGS) STUB_IN(codec_once, load_codecs, RET, NAME, PARAMS, ARGS)
#define STUB_VOID(NAME, PARAMS, ARGS) STUB_VOID_IN(codec_once, load_codecs, NAME, PARAMS, ARGS)
#define FORMAT_STUB(RET, NAME, PARAMS, ARGS) STUB_IN(load_once, load, RET, NAME, PARAMS, ARGS)
#define FORMAT_STUB_VOID(NAME, PARAMS, ARGS) STUB_VOID_IN(load_once, load, NAME, PARAMS, ARGS)
#define FILTER_STUB(RET, NAME, PARAMS, ARGS) STUB_IN(filter_once, load_filters, RET, NAME, PARAMS, ARGS)
#define FILTER_STUB_VOID(NAME, PARAMS, ARGS) STUB_VOID_IN(filter_once, load_filters, NAME, PARAMS, ARGS)

FORMAT_STUB(int, av_find_best_stream,
     (AVFormatContext *ic, enum AVMediaType type, int wanted_stream_nb, int related_stream,
      const AVCodec **decoder_ret, int flags),
     (ic, type, wanted_stream_nb, related_stream, decoder_ret, flags))
STUB(AVFrame *, av_frame_alloc, (void), ())
STUB_VOID(av_frame_free, (AVFrame **frame), (frame))
STUB_VOID(av_frame_move_ref, (AVFrame *dst, AVFrame *src), (dst, src))
STUB_VOID(av_frame_unref, (AVFrame *frame), (frame))
STUB_VOID(av_free, (void *ptr), (ptr))
STUB_VOID(av_freep, (void *ptr), (ptr))
STUB_VOID(av_log_set_level, (int level), (level))
STUB(void *, av_malloc, (size_t size), (size))
STUB(AVPacket *, av_packet_alloc, (void), ())
STUB_VOID(av_packet_free, (AVPacket **pkt), (pkt))
STUB_VOID(av_packet_unref, (AVPacket *pkt), (pkt))
FORMAT_STUB(int, av_read_frame, (AVFormatContext *s, AVPacket *pkt), (s, pkt))
FORMAT_STUB(int, av_seek_frame, (AVFormatContext *s, int stream_index, int64_t timestamp, int flags),
     (s, stream_index, timestamp, flags))
STUB(int, av_strerror, (int errnum, char *errbuf, size_t errbuf_size), (errnum, errbuf, errbuf_size))
STUB(AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec))
STUB_VOID(avcodec_flush_buffers, (AVCodecContext *avctx), (avctx))
STUB_VOID(avcodec_free_context, (AVCodecContext **avctx), (avctx))
STUB(int, avcodec_open2, (AVCodecContext *avctx, const AVCodec *codec, AVDictionary **options),
     (avctx, codec, options))
STUB(int, avcodec_parameters_to_context, (AVCodecContext *codec, const AVCodecParameters *par), (codec, par))
STUB(int, avcodec_receive_frame, (AVCodecContext *avctx, AVFrame *frame), (avctx, frame))
STUB(int, avcodec_send_packet, (AVCodecContext *avctx, const AVPacket *avpkt), (avctx, avpkt))
FORMAT_STUB(AVFormatContext *, avformat_alloc_context, (void), ())
FORMAT_STUB_VOID(avformat_close_input, (AVFormatContext **s), (s))
FORMAT_STUB(int, avformat_find_stream_info, (AVFormatContext *ic, AVDictionary **options), (ic, options))
FORMAT_STUB_VOID(avformat_free_context, (AVFormatContext *s), (s))
FORMAT_STUB(int, avformat_open_input,
     (AVFormatContext **ps, const char *url, const AVInputFormat *fmt, AVDictionary **options),
     (ps, url, fmt, options))
FORMAT_STUB(AVIOContext *, avio_alloc_context,
     (unsigned char *buffer, int buffer_size, int write_flag, void *opaque,
      int (*read_packet)(void *opaque, uint8_t *buf, int buf_size),
      int (*write_packet)(void *opaque, uint8_t *buf, int buf_size),
      int64_t (*seek)(void *opaque, int64_t offset, int whence)),
     (buffer, buffer_size, write_flag, opaque, read_packet, write_packet, seek))
FORMAT_STUB_VOID(avio_context_free, (AVIOContext **s), (s))
STUB(int, sws_scale,
     (struct SwsContext *c, const uint8_t *const srcSlice[], const int srcStride[], int srcSliceY,
      int srcSliceH, uint8_t *const dst[], const int dstStride[]),
     (c, srcSlice, srcStride, srcSliceY, srcSliceH, dst, dstStride))
STUB(struct SwsContext *, sws_getCachedContext,
     (struct SwsContext *context, int srcW, int srcH, enum AVPixelFormat srcFormat, int dstW, int dstH,
      enum AVPixelFormat dstFormat, int flags, SwsFilter *srcFilter, SwsFilter *dstFilter, const double *param),
     (context, srcW, srcH, srcFormat, dstW, dstH, dstFormat, flags, srcFilter, dstFilter, param))
STUB_VOID(sws_freeContext, (struct SwsContext *swsContext), (swsContext))
STUB(int, sws_setColorspaceDetails,
     (struct SwsContext *c, const int inv_table[4], int srcRange, const int table[4], int dstRange, int brightness,
      int contrast, int saturation),
     (c, inv_table, srcRange, table, dstRange, brightness, contrast, saturation))
STUB(const int *, sws_getCoefficients, (int colorspace), (colorspace))
FORMAT_STUB(uint8_t *, av_stream_get_side_data, (const AVStream *stream, enum AVPacketSideDataType type, size_t *size),
     (stream, type, size))
STUB(AVFrameSideData *, av_frame_get_side_data, (const AVFrame *frame, enum AVFrameSideDataType type), (frame, type))
STUB(AVDictionaryEntry *, av_dict_get, (const AVDictionary *m, const char *key, const AVDictionaryEntry *prev, int flags),
     (m, key, prev, flags))
STUB(const char *, av_get_pix_fmt_name, (enum AVPixelFormat pix_fmt), (pix_fmt))
FILTER_STUB(AVFilterGraph *, avfilter_graph_alloc, (void), ())
FILTER_STUB_VOID(avfilter_graph_free, (AVFilterGraph **graph), (graph))
FILTER_STUB(const AVFilter *, avfilter_get_by_name, (const char *name), (name))
FILTER_STUB(int, avfilter_graph_create_filter,
     (AVFilterContext **filt_ctx, const AVFilter *filt, const char *name, const char *args, void *opaque,
      AVFilterGraph *graph_ctx),
     (filt_ctx, filt, name, args, opaque, graph_ctx))
FILTER_STUB(int, avfilter_graph_parse_ptr,
     (AVFilterGraph *graph, const char *filters, AVFilterInOut **inputs, AVFilterInOut **outputs, void *log_ctx),
     (graph, filters, inputs, outputs, log_ctx))
FILTER_STUB(AVFilterInOut *, avfilter_inout_alloc, (void), ())
FILTER_STUB_VOID(avfilter_inout_free, (AVFilterInOut **inout), (inout))
FILTER_STUB(int, avfilter_graph_config, (AVFilterGraph *graphctx, void *log_ctx), (graphctx, log_ctx))
FILTER_STUB(int, av_buffersrc_add_frame_flags, (AVFilterContext *buffer_src, AVFrame *frame, int flags),
     (buffer_src, frame, flags))
FILTER_STUB(int, av_buffersink_get_frame, (AVFilterContext *ctx, AVFrame *frame), (ctx, frame))
STUB(char *, av_strdup, (const char *s), (s))
STUB(int, swr_alloc_set_opts2,
     (struct SwrContext **ps, AVChannelLayout *out_ch_layout, enum AVSampleFormat out_sample_fmt,
      int out_sample_rate, AVChannelLayout *in_ch_layout, enum AVSampleFormat in_sample_fmt, int in_sample_rate,
      int log_offset, void *log_ctx),
     (ps, out_ch_layout, out_sample_fmt, out_sample_rate, in_ch_layout, in_sample_fmt, in_sample_rate, log_offset,
      log_ctx))
STUB(int, swr_init, (struct SwrContext *s), (s))
STUB(int, swr_convert, (struct SwrContext *s, uint8_t **out, int out_count, const uint8_t **in, int in_count),
     (s, out, out_count, in, in_count))
STUB_VOID(swr_free, (struct SwrContext **s), (s))
STUB(int64_t, swr_get_delay, (struct SwrContext *s, int64_t base), (s, base))
STUB_VOID(av_channel_layout_default, (AVChannelLayout *ch_layout, int nb_channels), (ch_layout, nb_channels))
STUB_VOID(av_channel_layout_uninit, (AVChannelLayout *channel_layout), (channel_layout))
STUB_VOID(av_packet_move_ref, (AVPacket *dst, AVPacket *src), (dst, src))
STUB(void *, av_mallocz, (size_t size), (size))
STUB(int, av_new_packet, (AVPacket *pkt, int size), (pkt, size))
STUB(const AVCodec *, avcodec_find_decoder, (enum AVCodecID id), (id))
STUB(int, avcodec_decode_subtitle2, (AVCodecContext *avctx, AVSubtitle *sub, int *got_sub_ptr, AVPacket *avpkt),
     (avctx, sub, got_sub_ptr, avpkt))
STUB_VOID(avsubtitle_free, (AVSubtitle *sub), (sub))

// The frame's own layout, or the default one for its channel count when it names none.
static void input_layout(const AVFrame *frame, AVChannelLayout *layout) {
    if (frame->ch_layout.order != AV_CHANNEL_ORDER_UNSPEC && frame->ch_layout.nb_channels > 0) {
        *layout = frame->ch_layout;
    } else {
        av_channel_layout_default(layout, frame->ch_layout.nb_channels > 0 ? frame->ch_layout.nb_channels : 1);
    }
}

struct SwrContext *stories_resampler_open(const AVFrame *frame, int rate, int channels) {
    AVChannelLayout in_layout, out_layout;
    input_layout(frame, &in_layout);
    av_channel_layout_default(&out_layout, channels);
    struct SwrContext *context = NULL;
    int status = swr_alloc_set_opts2(&context, &out_layout, AV_SAMPLE_FMT_S16, rate, &in_layout,
                                     (enum AVSampleFormat)frame->format, frame->sample_rate, 0, NULL);
    if (status < 0 || !context) return NULL;
    if (swr_init(context) < 0) {
        swr_free(&context);
        return NULL;
    }
    return context;
}

int stories_resample(struct SwrContext *resampler, const AVFrame *frame, int16_t *out, int out_frames) {
    uint8_t *planes[1] = {(uint8_t *)out};
    return swr_convert(resampler, planes, out_frames, (const uint8_t **)frame->extended_data, frame->nb_samples);
}

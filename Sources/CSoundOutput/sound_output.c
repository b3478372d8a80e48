// The sound device: PulseAudio's simple API, else ALSA, each loaded with dlopen. Their types are declared here as
// their stable ABIs define them, so neither library's development package is needed to build.

#include "sound_output.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// PulseAudio (pulse/simple.h, pulse/sample.h, pulse/def.h).
typedef struct pa_simple pa_simple;
typedef struct {
    int format;
    uint32_t rate;
    uint8_t channels;
} pa_sample_spec;
typedef struct {
    uint32_t maxlength, tlength, prebuf, minreq, fragsize;
} pa_buffer_attr;
enum { PA_STREAM_PLAYBACK = 1, PA_SAMPLE_S16LE = 3 };
typedef pa_simple *(*pa_simple_new_t)(const char *, const char *, int, const char *, const char *,
                                      const pa_sample_spec *, const void *, const pa_buffer_attr *, int *);
typedef int (*pa_simple_write_t)(pa_simple *, const void *, size_t, int *);
typedef uint64_t (*pa_simple_get_latency_t)(pa_simple *, int *);
typedef int (*pa_simple_flush_t)(pa_simple *, int *);
typedef void (*pa_simple_free_t)(pa_simple *);
typedef const char *(*pa_strerror_t)(int);

// ALSA (alsa/pcm.h, alsa/error.h).
typedef struct snd_pcm snd_pcm_t;
enum { SND_PCM_STREAM_PLAYBACK = 0, SND_PCM_FORMAT_S16_LE = 2, SND_PCM_ACCESS_RW_INTERLEAVED = 3 };
typedef void (*snd_lib_error_handler_t)(const char *, int, const char *, int, const char *, ...);
typedef int (*snd_pcm_open_t)(snd_pcm_t **, const char *, int, int);
typedef int (*snd_pcm_set_params_t)(snd_pcm_t *, int, int, unsigned, unsigned, int, unsigned);
typedef long (*snd_pcm_writei_t)(snd_pcm_t *, const void *, unsigned long);
typedef int (*snd_pcm_delay_t)(snd_pcm_t *, long *);
typedef int (*snd_pcm_recover_t)(snd_pcm_t *, int, int);
typedef int (*snd_pcm_drop_t)(snd_pcm_t *);
typedef int (*snd_pcm_prepare_t)(snd_pcm_t *);
typedef int (*snd_pcm_close_t)(snd_pcm_t *);
typedef const char *(*snd_strerror_t)(int);
typedef int (*snd_lib_error_set_handler_t)(snd_lib_error_handler_t);

struct stories_sound {
    int backend;
    unsigned channels;
    unsigned rate;
    pa_simple *pulse;
    snd_pcm_t *pcm;
    pa_simple_write_t pa_write;
    pa_simple_get_latency_t pa_latency;
    pa_simple_flush_t pa_flush;
    pa_simple_free_t pa_free;
    pa_strerror_t pa_error;
    snd_pcm_writei_t alsa_write;
    snd_pcm_delay_t alsa_delay;
    snd_pcm_recover_t alsa_recover;
    snd_pcm_drop_t alsa_drop;
    snd_pcm_prepare_t alsa_prepare;
    snd_pcm_close_t alsa_close;
    snd_strerror_t alsa_error;
};

// libasound prints its errors to stderr unless given a handler (which is variadic: Swift cannot write one).
static void silent_alsa_errors(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file;
    (void)line;
    (void)function;
    (void)err;
    (void)fmt;
}

static stories_sound *open_pulse(const char *application, unsigned rate, unsigned channels, unsigned latency_ms,
                                 char *error, size_t size) {
    void *library = dlopen("libpulse-simple.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(error, size, "PulseAudio's client library is not installed (libpulse-simple.so.0)");
        return NULL;
    }
    pa_simple_new_t pa_new = (pa_simple_new_t)dlsym(library, "pa_simple_new");
    stories_sound *sound = calloc(1, sizeof *sound);
    if (!sound) return NULL;
    sound->pa_write = (pa_simple_write_t)dlsym(library, "pa_simple_write");
    sound->pa_latency = (pa_simple_get_latency_t)dlsym(library, "pa_simple_get_latency");
    sound->pa_flush = (pa_simple_flush_t)dlsym(library, "pa_simple_flush");
    sound->pa_free = (pa_simple_free_t)dlsym(library, "pa_simple_free");
    sound->pa_error = (pa_strerror_t)dlsym(library, "pa_strerror");
    if (!pa_new || !sound->pa_write || !sound->pa_latency || !sound->pa_flush || !sound->pa_free || !sound->pa_error) {
        snprintf(error, size, "PulseAudio's client library lacks the simple API");
        free(sound);
        return NULL;
    }
    pa_sample_spec spec = {PA_SAMPLE_S16LE, rate, (uint8_t)channels};
    uint32_t frame = 2 * channels;
    uint32_t target = rate / 1000 * latency_ms * frame;
    // The buffer covers the longest a busy machine leaves the writing thread unrun (60 ms was too short on two
    // loaded cores: silences of 10 to 35 ms; 150 ms, of which the server keeps about half in the sink, still let
    // slower machines hear 35 to 75 ms silences). Pause and story changes are still heard at once (they flush it),
    // and the audio clock subtracts the latency the server reports.
    pa_buffer_attr attr = {(uint32_t)-1, target, (uint32_t)-1, target / 4, (uint32_t)-1};
    int code = 0;
    sound->pulse = pa_new(NULL, application, PA_STREAM_PLAYBACK, NULL, "story", &spec, NULL, &attr, &code);
    if (!sound->pulse) {
        snprintf(error, size, "no sound server (%s)", sound->pa_error(code));
        free(sound);
        return NULL;
    }
    sound->backend = STORIES_SOUND_PULSE;
    sound->rate = rate;
    sound->channels = channels;
    return sound;
}

static stories_sound *open_alsa(unsigned rate, unsigned channels, unsigned latency_ms, char *error, size_t size) {
    void *library = dlopen("libasound.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(error, size, "ALSA's library is not installed (libasound.so.2)");
        return NULL;
    }
    snd_lib_error_set_handler_t set_handler = (snd_lib_error_set_handler_t)dlsym(library, "snd_lib_error_set_handler");
    snd_pcm_open_t pcm_open = (snd_pcm_open_t)dlsym(library, "snd_pcm_open");
    snd_pcm_set_params_t set_params = (snd_pcm_set_params_t)dlsym(library, "snd_pcm_set_params");
    stories_sound *sound = calloc(1, sizeof *sound);
    if (!sound) return NULL;
    sound->alsa_write = (snd_pcm_writei_t)dlsym(library, "snd_pcm_writei");
    sound->alsa_delay = (snd_pcm_delay_t)dlsym(library, "snd_pcm_delay");
    sound->alsa_recover = (snd_pcm_recover_t)dlsym(library, "snd_pcm_recover");
    sound->alsa_drop = (snd_pcm_drop_t)dlsym(library, "snd_pcm_drop");
    sound->alsa_prepare = (snd_pcm_prepare_t)dlsym(library, "snd_pcm_prepare");
    sound->alsa_close = (snd_pcm_close_t)dlsym(library, "snd_pcm_close");
    sound->alsa_error = (snd_strerror_t)dlsym(library, "snd_strerror");
    if (!set_handler || !pcm_open || !set_params || !sound->alsa_write || !sound->alsa_delay || !sound->alsa_recover ||
        !sound->alsa_drop || !sound->alsa_prepare || !sound->alsa_close || !sound->alsa_error) {
        snprintf(error, size, "ALSA's library lacks the PCM API");
        free(sound);
        return NULL;
    }
    set_handler(silent_alsa_errors);
    int status = pcm_open(&sound->pcm, "default", SND_PCM_STREAM_PLAYBACK, 0);
    if (status < 0) {
        snprintf(error, size, "no sound device (%s)", sound->alsa_error(status));
        free(sound);
        return NULL;
    }
    status = set_params(sound->pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, channels, rate, 1,
                        latency_ms * 1000);
    if (status < 0) {
        snprintf(error, size, "the sound device refused %u Hz, %u channels (%s)", rate, channels,
                 sound->alsa_error(status));
        sound->alsa_close(sound->pcm);
        free(sound);
        return NULL;
    }
    sound->backend = STORIES_SOUND_ALSA;
    sound->rate = rate;
    sound->channels = channels;
    return sound;
}

stories_sound *stories_sound_open(int backend, const char *application, unsigned rate, unsigned channels,
                                  unsigned latency_ms, char *error, size_t size) {
    char pulse_error[256] = "";
    if (backend != STORIES_SOUND_ALSA) {
        stories_sound *sound = open_pulse(application, rate, channels, latency_ms, pulse_error, sizeof pulse_error);
        if (sound || backend == STORIES_SOUND_PULSE) {
            if (!sound) snprintf(error, size, "%s", pulse_error);
            return sound;
        }
    }
    char alsa_error[256] = "";
    stories_sound *sound = open_alsa(rate, channels, latency_ms, alsa_error, sizeof alsa_error);
    if (!sound) {
        if (backend == STORIES_SOUND_AUTO) {
            // The two reasons follow the sentence a narrow pane can still show.
            snprintf(error, size, "no sound server or device (%s; %s)", pulse_error, alsa_error);
        } else {
            snprintf(error, size, "%s", alsa_error);
        }
    }
    return sound;
}

int stories_sound_write(stories_sound *sound, const void *data, size_t frames, char *error, size_t size) {
    if (sound->pulse) {
        int code = 0;
        if (sound->pa_write(sound->pulse, data, frames * 2 * sound->channels, &code) < 0) {
            snprintf(error, size, "the sound server stopped taking sound (%s)", sound->pa_error(code));
            return -1;
        }
        return 0;
    }
    const char *bytes = data;
    while (frames > 0) {
        long written = sound->alsa_write(sound->pcm, bytes, frames);
        if (written < 0) {
            // An underrun (-EPIPE) or a suspended device (-ESTRPIPE) recovers; anything else ends the sound.
            if (sound->alsa_recover(sound->pcm, (int)written, 1) < 0) {
                snprintf(error, size, "the sound device stopped taking sound (%s)", sound->alsa_error((int)written));
                return -1;
            }
            continue;
        }
        bytes += (size_t)written * 2 * sound->channels;
        frames -= (size_t)written;
    }
    return 0;
}

int64_t stories_sound_delay_us(stories_sound *sound) {
    if (sound->pulse) {
        int code = 0;
        uint64_t latency = sound->pa_latency(sound->pulse, &code);
        return latency == (uint64_t)-1 ? -1 : (int64_t)latency;
    }
    long delay = 0;
    if (sound->alsa_delay(sound->pcm, &delay) < 0) return -1;
    return delay < 0 ? 0 : (int64_t)delay * 1000000 / sound->rate;
}

void stories_sound_flush(stories_sound *sound) {
    if (sound->pulse) {
        int code = 0;
        sound->pa_flush(sound->pulse, &code);
        return;
    }
    sound->alsa_drop(sound->pcm);
    sound->alsa_prepare(sound->pcm);
}

void stories_sound_close(stories_sound *sound) {
    if (!sound) return;
    if (sound->pulse) sound->pa_free(sound->pulse);
    if (sound->pcm) sound->alsa_close(sound->pcm);
    free(sound);
}

const char *stories_sound_backend(const stories_sound *sound) {
    return sound->backend == STORIES_SOUND_PULSE ? "PulseAudio" : "ALSA";
}

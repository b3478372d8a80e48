#ifndef STORIES_SOUND_OUTPUT_H
#define STORIES_SOUND_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

// A sound device taking interleaved signed 16-bit little-endian samples: PulseAudio's simple client library (which
// also reaches PipeWire desktops), else ALSA. Both are loaded with dlopen on first use, so the program neither links
// them nor needs their development headers, and runs (muted) where neither is installed.
typedef struct stories_sound stories_sound;

// Which library to use.
enum { STORIES_SOUND_AUTO = 0, STORIES_SOUND_PULSE = 1, STORIES_SOUND_ALSA = 2 };

// Opens a playback stream of `rate` frames a second and `channels` channels, buffering about `latency_ms`
// milliseconds. Blocks (a server that does not answer can take seconds): call it off the UI thread. NULL on
// failure, with why in `error`.
stories_sound *stories_sound_open(int backend, const char *application, unsigned rate, unsigned channels,
                                  unsigned latency_ms, char *error, size_t size);
// Writes `frames` frames, blocking until the device took them. 0 on success; otherwise -1 with why in `error`.
int stories_sound_write(stories_sound *sound, const void *data, size_t frames, char *error, size_t size);
// Microseconds between the next frame written and the moment it is heard; -1 when the device cannot say.
int64_t stories_sound_delay_us(stories_sound *sound);
// Drops what the device holds and has not played yet (pause, seek, a story change: nothing of it is heard after).
void stories_sound_flush(stories_sound *sound);
// Closes the stream.
void stories_sound_close(stories_sound *sound);
// "PulseAudio" or "ALSA".
const char *stories_sound_backend(const stories_sound *sound);

#endif

// Loads a shared library one object at a time, its dependencies first, each with a dlopen of its own.
//
// The dynamic loader holds its locks for the whole of a dlopen, and a thread being created waits for them (its TLS
// is set up under the same lock). Loading FFmpeg in one call (libavcodec and libavformat bring some 130 objects,
// each bound at once) holds them for 40-80 ms, and every thread the program starts meanwhile waits that long. One
// object per call holds them a fraction of a millisecond at a time. The order is read from each file's DT_NEEDED
// entries; a file this cannot find or read just leaves its dependencies to the dlopen of the object needing it.

#define _GNU_SOURCE
#include "library_order.h"
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SEEN 512
#define MAX_NEEDED 128
#define MAX_DIRECTORIES 4

struct walk {
    const char *seen[MAX_SEEN];
    int seen_count;
    char directories[MAX_DIRECTORIES][256];
    int directory_count;
    int flags;
};

static int already_seen(struct walk *walk, const char *name) {
    for (int i = 0; i < walk->seen_count; i++) {
        if (strcmp(walk->seen[i], name) == 0) return 1;
    }
    return 0;
}

// The directories the system's own libraries are in: libc's, and the same under /usr (Debian's multiarch pair).
static void find_directories(struct walk *walk) {
    Dl_info info;
    if (!dladdr((void *)&dlopen, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash || (size_t)(slash - info.dli_fname) >= sizeof walk->directories[0] - 5) return;
    int length = (int)(slash - info.dli_fname);
    snprintf(walk->directories[walk->directory_count++], sizeof walk->directories[0], "%.*s", length, info.dli_fname);
    if (strncmp(info.dli_fname, "/usr/", 5) == 0) {
        snprintf(walk->directories[walk->directory_count++], sizeof walk->directories[0], "%.*s", length - 4,
                 info.dli_fname + 4);
    } else {
        snprintf(walk->directories[walk->directory_count++], sizeof walk->directories[0], "/usr%.*s", length,
                 info.dli_fname);
    }
}

// The byte offset in the file of virtual address `address`, through the PT_LOAD segment holding it; 0 when none.
static size_t file_offset(const Elf64_Phdr *headers, int count, Elf64_Addr address) {
    for (int i = 0; i < count; i++) {
        const Elf64_Phdr *header = &headers[i];
        if (header->p_type == PT_LOAD && address >= header->p_vaddr && address - header->p_vaddr < header->p_filesz) {
            return (size_t)(header->p_offset + (address - header->p_vaddr));
        }
    }
    return 0;
}

// Copies the DT_NEEDED names of the ELF file at `path` into `needed` (each at most 127 bytes); how many, or -1.
static int needed_names(const char *path, char needed[][128], int capacity) {
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return -1;
    struct stat status;
    if (fstat(descriptor, &status) != 0 || status.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(descriptor);
        return -1;
    }
    size_t size = (size_t)status.st_size;
    const unsigned char *bytes = mmap(NULL, size, PROT_READ, MAP_PRIVATE, descriptor, 0);
    close(descriptor);
    if (bytes == MAP_FAILED) return -1;
    int count = -1;
    const Elf64_Ehdr *file = (const Elf64_Ehdr *)bytes;
    if (memcmp(file->e_ident, ELFMAG, SELFMAG) != 0 || file->e_ident[EI_CLASS] != ELFCLASS64 ||
        file->e_phentsize != sizeof(Elf64_Phdr) || file->e_phoff > size ||
        (size - file->e_phoff) / sizeof(Elf64_Phdr) < file->e_phnum) {
        goto done;
    }
    const Elf64_Phdr *headers = (const Elf64_Phdr *)(bytes + file->e_phoff);
    const Elf64_Phdr *dynamic = NULL;
    for (int i = 0; i < file->e_phnum; i++) {
        if (headers[i].p_type == PT_DYNAMIC) dynamic = &headers[i];
    }
    if (!dynamic || dynamic->p_offset > size || (size - dynamic->p_offset) < dynamic->p_filesz) goto done;
    const Elf64_Dyn *entries = (const Elf64_Dyn *)(bytes + dynamic->p_offset);
    size_t entry_count = dynamic->p_filesz / sizeof(Elf64_Dyn);
    size_t strings = 0, strings_size = 0;
    for (size_t i = 0; i < entry_count && entries[i].d_tag != DT_NULL; i++) {
        if (entries[i].d_tag == DT_STRTAB) strings = file_offset(headers, file->e_phnum, entries[i].d_un.d_ptr);
        if (entries[i].d_tag == DT_STRSZ) strings_size = entries[i].d_un.d_val;
    }
    if (strings == 0 || strings > size || size - strings < strings_size) goto done;
    count = 0;
    for (size_t i = 0; i < entry_count && entries[i].d_tag != DT_NULL && count < capacity; i++) {
        if (entries[i].d_tag != DT_NEEDED || entries[i].d_un.d_val >= strings_size) continue;
        const char *name = (const char *)bytes + strings + entries[i].d_un.d_val;
        size_t length = strnlen(name, strings_size - entries[i].d_un.d_val);
        if (length == 0 || length >= 128 || length == strings_size - entries[i].d_un.d_val) continue;
        memcpy(needed[count], name, length + 1);
        count++;
    }
done:
    munmap((void *)bytes, size);
    return count;
}

static void remember(struct walk *walk, const char *name) {
    if (walk->seen_count >= MAX_SEEN || already_seen(walk, name)) return;
    char *kept = strdup(name);
    if (kept) walk->seen[walk->seen_count++] = kept;
}

// Every object loaded already counts as seen, by its file's name (the name the loader found it by: a soname).
static int note_loaded(struct dl_phdr_info *info, size_t size, void *context) {
    (void)size;
    const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    if (slash && slash[1]) remember(context, slash + 1);
    return 0;
}

static void load_in_order(struct walk *walk, const char *name, int depth) {
    if (depth > 32 || already_seen(walk, name) || walk->seen_count >= MAX_SEEN) return;
    remember(walk, name);
    char needed[MAX_NEEDED][128];
    int count = -1;
    for (int i = 0; i < walk->directory_count && count < 0; i++) {
        char path[512];
        if (snprintf(path, sizeof path, "%s/%s", walk->directories[i], name) < (int)sizeof path) {
            count = needed_names(path, needed, MAX_NEEDED);
        }
    }
    for (int i = 0; i < count; i++) load_in_order(walk, needed[i], depth + 1);
    // Loaded for good (the program keeps FFmpeg to its end); a failure is left to the caller's own dlopen. A name
    // the loader knows by another file name is only looked up again: a dlopen of a loaded object just counts it.
    (void)dlopen(name, walk->flags);
}

void stories_load_in_order(const char *name, int flags) {
    static struct walk walk;
    if (walk.directory_count == 0) find_directories(&walk);
    // Asking the loader about each name (RTLD_NOLOAD) would take its lock and scan every object, once per name.
    dl_iterate_phdr(note_loaded, &walk);
    walk.flags = flags;
    load_in_order(&walk, name, 0);
}

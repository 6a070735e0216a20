//go:build ceph && linux && cgo

package cephfs

/*
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// gcf_wants_single_arena is 0 when the environment chose an arena count:
// MALLOC_ARENA_MAX (max), or glibc.malloc.arena_max in GLIBC_TUNABLES.
static int gcf_wants_single_arena(const char *max, const char *tunables) {
	if (max != NULL && *max != 0)
		return 0;
	if (tunables != NULL && strstr(tunables, "glibc.malloc.arena_max") != NULL)
		return 0;
	return 1;
}

static int gcf_single_arena_set;

// A constructor, so that it runs before the Go runtime starts its
// threads: each thread's first malloc or free makes it an arena, and an
// arena once made stays in the list that later threads are given from.
__attribute__((constructor)) static void gcf_single_arena(void) {
	if (gcf_wants_single_arena(getenv("MALLOC_ARENA_MAX"), getenv("GLIBC_TUNABLES")))
		gcf_single_arena_set = mallopt(M_ARENA_MAX, 1) == 1;
}

static int gcf_single_arena_was_set(void) { return gcf_single_arena_set; }

// gcf_touch_sync holds the threads of gcf_arenas_with_threads: each
// counts itself in allocated once it holds its allocation and frees it
// only after release is set.
struct gcf_touch_sync {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int allocated, release;
};

static void *gcf_touch(void *arg) {
	struct gcf_touch_sync *sync = arg;
	void *p = malloc(65536);
	if (p != NULL)
		memset(p, 1, 65536);
	pthread_mutex_lock(&sync->mu);
	sync->allocated++;
	pthread_cond_broadcast(&sync->cond);
	while (!sync->release)
		pthread_cond_wait(&sync->cond, &sync->mu);
	pthread_mutex_unlock(&sync->mu);
	free(p);
	return NULL;
}

// gcf_count_arenas returns the number of arenas malloc_info(3) reports,
// or -1.
static int gcf_count_arenas(void) {
	char *buf = NULL;
	size_t len = 0;
	int arenas = -1;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL)
		return -1;
	if (malloc_info(0, f) == 0 && fflush(f) == 0) {
		arenas = 0;
		for (char *s = buf; (s = strstr(s, "<heap nr=")) != NULL; s++)
			arenas++;
	}
	fclose(f);
	free(buf);
	return arenas;
}

// gcf_arenas_with_threads starts n threads (n <= 64) that each allocate
// and hold the memory, and returns the number of arenas while all of them
// do (-1 on error).
static int gcf_arenas_with_threads(int n) {
	struct gcf_touch_sync sync = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
	pthread_t t[64];
	int started = 0, arenas = -1;
	if (n < 1 || n > 64)
		return -1;
	for (; started < n; started++)
		if (pthread_create(&t[started], NULL, gcf_touch, &sync) != 0)
			break;
	pthread_mutex_lock(&sync.mu);
	while (sync.allocated < started)
		pthread_cond_wait(&sync.cond, &sync.mu);
	pthread_mutex_unlock(&sync.mu);
	if (started == n)
		arenas = gcf_count_arenas();
	pthread_mutex_lock(&sync.mu);
	sync.release = 1;
	pthread_cond_broadcast(&sync.cond);
	pthread_mutex_unlock(&sync.mu);
	for (int i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	return arenas;
}
*/
import "C"

import "unsafe"

// singleMallocArena reports whether this process runs with glibc's
// M_ARENA_MAX at 1, set before any thread started (a C constructor of this
// package, in every binary built with the CephFS backend) unless the
// environment chose an arena count (MALLOC_ARENA_MAX, or
// glibc.malloc.arena_max in GLIBC_TUNABLES).
//
// Go allocates nothing with malloc; libcephfs does, and its messenger
// threads receive every OSD reply into freshly allocated buffers. With
// glibc's default of up to 8 arenas a core, threads get arenas of their
// own whose heaps are unmapped when they empty between reads, so the next
// reply lands in new pages the kernel must zero: in a sequential READ
// that was 15 % of the server's samples (clear_page under the messenger's
// socket read) and up to 3x the CPU per GiB of the same read with one
// arena. In the main arena freed memory stays mapped up to the trim
// threshold and is reused (docs/performance.md, CephFS table). The threads
// that allocate are a handful of libcephfs's (messenger, dispatch, the
// calls Go makes into it), so the one arena's lock is not where they wait.
func singleMallocArena() bool { return C.gcf_single_arena_was_set() != 0 }

// singleMallocArenaWanted is the constructor's test of the environment:
// false when MALLOC_ARENA_MAX is max (set) or tunables (GLIBC_TUNABLES)
// names glibc.malloc.arena_max.
func singleMallocArenaWanted(max, tunables string) bool {
	cm, ct := C.CString(max), C.CString(tunables)
	defer C.free(unsafe.Pointer(cm))
	defer C.free(unsafe.Pointer(ct))
	return C.gcf_wants_single_arena(cm, ct) != 0
}

// mallocArenasWithThreads returns the number of malloc arenas while n new
// threads each hold an allocation (tests).
func mallocArenasWithThreads(n int) int {
	return int(C.gcf_arenas_with_threads(C.int(n)))
}

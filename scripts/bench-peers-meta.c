/*
 * bench-peers-meta: a metadata client that nobody in this project wrote
 * the protocol side of. It drives libnfs's synchronous API (Debian's
 * libnfs-dev), so every operation is one call at a time, as ls -l, find,
 * tar and most scripts issue them: N files created (nfs_creat + nfs_close),
 * stat'ed (nfs_stat64) and unlinked (nfs_unlink), each by path, in a
 * fresh directory below the export. libnfs resolves each path from the
 * export root, so an operation is LOOKUPs of the path plus the call.
 *
 * usage: bench-peers-meta URL FILES SERVER_PID
 *   URL: nfs://HOST/EXPORT?version=3&uid=U&gid=G&... (libnfs's URL)
 * Prints one tab-separated line per phase:
 *   phase  ops  seconds  server_cpu_seconds
 * where the server's CPU is user+system of SERVER_PID from /proc (clock
 * ticks), read before and after the phase. Exit status 1 on any error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* server_cpu returns utime+stime of pid in seconds, or -1. */
static double server_cpu(int pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	/* Fields after the command name, which ends at the last ')'. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return -1;
	unsigned long long ut, st;
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

static void fail(struct nfs_context *nfs, const char *what, const char *path)
{
	fprintf(stderr, "bench-peers-meta: %s %s: %s\n", what, path, nfs_get_error(nfs));
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s URL FILES SERVER_PID\n", argv[0]);
		return 2;
	}
	long files = strtol(argv[2], NULL, 10);
	int pid = atoi(argv[3]);
	if (files <= 0 || pid <= 0) {
		fprintf(stderr, "bench-peers-meta: FILES and SERVER_PID must be positive\n");
		return 2;
	}
	struct nfs_context *nfs = nfs_init_context();
	if (nfs == NULL) {
		fprintf(stderr, "bench-peers-meta: nfs_init_context failed\n");
		return 1;
	}
	struct nfs_url *url = nfs_parse_url_dir(nfs, argv[1]);
	if (url == NULL)
		fail(nfs, "parsing", argv[1]);
	if (nfs_mount(nfs, url->server, url->path) != 0)
		fail(nfs, "mounting", url->path);

	char dir[64], path[96];
	snprintf(dir, sizeof dir, "/meta.%d", (int)getpid());
	if (nfs_mkdir(nfs, dir) != 0)
		fail(nfs, "mkdir", dir);

	static const char *phases[] = {"create", "stat", "unlink"};
	for (int ph = 0; ph < 3; ph++) {
		double c0 = server_cpu(pid), t0 = now();
		for (long i = 0; i < files; i++) {
			snprintf(path, sizeof path, "%s/f%06ld", dir, i);
			switch (ph) {
			case 0: {
				struct nfsfh *fh;
				if (nfs_creat(nfs, path, 0644, &fh) != 0)
					fail(nfs, "creat", path);
				if (nfs_close(nfs, fh) != 0)
					fail(nfs, "close", path);
				break;
			}
			case 1: {
				struct nfs_stat_64 st;
				if (nfs_stat64(nfs, path, &st) != 0)
					fail(nfs, "stat", path);
				if ((st.nfs_mode & S_IFMT) != S_IFREG || st.nfs_size != 0)
					fail(nfs, "stat (not an empty regular file)", path);
				break;
			}
			case 2:
				if (nfs_unlink(nfs, path) != 0)
					fail(nfs, "unlink", path);
				break;
			}
		}
		double t1 = now(), c1 = server_cpu(pid);
		printf("%s\t%ld\t%.6f\t%.3f\n", phases[ph], files, t1 - t0,
		       c0 >= 0 && c1 >= 0 ? c1 - c0 : -1.0);
		fflush(stdout);
	}
	/* Nothing may be left: the directory must be empty to go. */
	if (nfs_rmdir(nfs, dir) != 0)
		fail(nfs, "rmdir", dir);
	nfs_destroy_url(url);
	nfs_destroy_context(nfs);
	return 0;
}

/*
 * syscall-kinds: one phase per NFSv3 procedure kind, through libnfs's
 * synchronous API (one call in flight), for counting the server's system
 * calls per kind (docs/performance.md, section 10): in a fresh directory
 * k.PID below the export, N files created (LOOKUP + CREATE), chmod'ed
 * (SETATTR), access'ed (ACCESS), a missing name stat'ed N times (LOOKUP
 * of a missing name), each file opened and fstat'ed (GETATTR), the
 * directory listed three times (READDIRPLUS), the files unlinked
 * (REMOVE). Pair it with `strace -f -tt -p SERVER_PID -o FILE` and
 * scripts/syscall-attr.py FILE.
 *
 * build: gcc -O2 -o syscall-kinds scripts/syscall-kinds.c -lnfs
 * usage: syscall-kinds URL N   (URL as bench-peers-meta's)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <nfsc/libnfs.h>
static void ck(int r, struct nfs_context *n, const char *w){ if(r<0){fprintf(stderr,"%s: %s\n",w,nfs_get_error(n)); exit(1);} }
int main(int argc,char**argv){
  int N=atoi(argv[2]); char d[64],p[128];
  struct nfs_context*n=nfs_init_context(); struct nfs_url*u=nfs_parse_url_dir(n,argv[1]);
  ck(nfs_mount(n,u->server,u->path),n,"mount");
  snprintf(d,sizeof d,"k.%d",getpid()); ck(nfs_mkdir(n,d),n,"mkdir");
  for(int i=0;i<N;i++){ struct nfsfh*fh; snprintf(p,sizeof p,"%s/f%05d",d,i); ck(nfs_creat(n,p,0644,&fh),n,"creat"); ck(nfs_close(n,fh),n,"close"); }
  for(int i=0;i<N;i++){ snprintf(p,sizeof p,"%s/f%05d",d,i); ck(nfs_chmod(n,p,0600),n,"chmod"); }
  for(int i=0;i<N;i++){ snprintf(p,sizeof p,"%s/f%05d",d,i); ck(nfs_access(n,p,R_OK),n,"access"); }
  for(int i=0;i<N;i++){ struct nfs_stat_64 st; snprintf(p,sizeof p,"%s/nx%05d",d,i); if(nfs_stat64(n,p,&st)==0){fprintf(stderr,"exists?\n");exit(1);} }
  for(int i=0;i<N;i++){ struct nfsfh*fh; struct nfs_stat_64 st; snprintf(p,sizeof p,"%s/f%05d",d,i); ck(nfs_open(n,p,O_RDONLY,&fh),n,"open"); ck(nfs_fstat64(n,fh,&st),n,"fstat"); ck(nfs_close(n,fh),n,"close"); }
  for(int i=0;i<3;i++){ struct nfsdir*dir; ck(nfs_opendir(n,d,&dir),n,"opendir"); int c=0; while(nfs_readdir(n,dir)) c++; nfs_closedir(n,dir); if(c!=N+2){fprintf(stderr,"readdir %d\n",c);} }
  for(int i=0;i<N;i++){ snprintf(p,sizeof p,"%s/f%05d",d,i); ck(nfs_unlink(n,p),n,"unlink"); }
  ck(nfs_rmdir(n,d),n,"rmdir");
  return 0;
}

#!/usr/bin/env bash
# Makes .devlibs/: FFmpeg (libavformat, libavcodec, libavutil, libswscale, the ffmpeg CLI),
# libsndfile and NVIDIA's codec headers for the GPU machine, which has none of them and
# cannot install packages. The
# device tool carries it (carry: [".devlibs"]); scripts/gpu-check.sh finds it there, so the
# video and audio operators, and their GPU forms, are built and tested on that machine.
#
# FFmpeg is Debian's own source (bookworm, 5.1.x: the same ABI as the libav*-dev headers
# the build uses), configured small: the demuxers, decoders and encoders the tests use, the
# NVDEC hwaccels (through ffnvcodec, which loads libcuda/libnvcuvid at run time), libx264.
# libsndfile and the codec libraries it needs are copied from this machine's packages.
# Needs: deb-src entries for bookworm (added here when missing), nasm, libx264-dev,
# libffmpeg-nvenc-dev, libsndfile1-dev. About 6 minutes on 2 cores; ~15 MB.
set -eu -o pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUTDIR=$ROOT/.devlibs
WORK=${TMPDIR:-/tmp}/stk-devlibs
if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    >/etc/apt/sources.list.d/stk-src.sources
  apt-get update -qq
fi
apt-get install -y -qq nasm libx264-dev libffmpeg-nvenc-dev libsndfile1-dev >/dev/null
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK"
apt-get source --download-only ffmpeg >/dev/null
tar xf ffmpeg_*.orig.tar.xz
cd ffmpeg-*/
./configure --prefix="$OUTDIR" --enable-shared --disable-static --disable-doc \
  --disable-autodetect --disable-everything --enable-gpl --enable-libx264 \
  --enable-ffnvcodec --enable-nvdec --enable-cuda --enable-protocol=file,pipe \
  --enable-demuxer=mov,matroska,avi,rawvideo,h264,hevc,wav,flac \
  --enable-muxer=mp4,mov,matroska,avi,h264,rawvideo,wav,flac \
  --enable-decoder=h264,hevc,mpeg4,ffv1,rawvideo,pcm_s16le,flac \
  --enable-encoder=ffv1,rawvideo,libx264,mpeg4,pcm_s16le,flac \
  --enable-parser=h264,hevc,mpeg4video,flac \
  --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,extract_extradata \
  --enable-hwaccel=h264_nvdec,hevc_nvdec,mpeg4_nvdec \
  --enable-filter=scale,format,null,anull,setpts,trim,fps,aformat,aresample --enable-swresample \
  --disable-ffplay --enable-ffprobe --disable-avdevice --disable-postproc \
  >configure.log
make -j"$(nproc)" >build.log 2>&1
rm -rf "$OUTDIR"
make install >>build.log 2>&1
rm -rf "$OUTDIR/share"
# paths relative to prefix=, which scripts/gpu-check.sh points at wherever the folder lies
sed -i "s#$OUTDIR#\${prefix}#g; s#^prefix=.*#prefix=$OUTDIR#" "$OUTDIR"/lib/pkgconfig/*.pc
cd "$OUTDIR/lib"
for l in libx264.so.164 libsndfile.so.1 libFLAC.so.12 libvorbis.so.0 libvorbisenc.so.2 libopus.so.0 \
  libogg.so.0 libmpg123.so.0 libmp3lame.so.0; do
  cp -L "/usr/lib/x86_64-linux-gnu/$l" .
done
ln -sf libsndfile.so.1 libsndfile.so
cp /usr/include/sndfile.h "$OUTDIR/include/"
# without Requires.private: the codec libraries' own .pc files are not carried
cat >pkgconfig/sndfile.pc <<PC
prefix=$OUTDIR
libdir=\${prefix}/lib
includedir=\${prefix}/include
Name: sndfile
Description: libsndfile for the GPU machine (copied from Debian's libsndfile1)
Version: $(pkg-config --modversion sndfile)
Libs: -L\${libdir} -lsndfile
Cflags: -I\${includedir}
PC
# NVIDIA's codec headers (the video parser's declarations; libnvcuvid itself is the driver's)
cp -r /usr/include/ffnvcodec "$OUTDIR/include/"
cat >pkgconfig/ffnvcodec.pc <<PC
prefix=$OUTDIR
includedir=\${prefix}/include
Name: ffnvcodec
Description: NVIDIA codec headers for the GPU machine (copied from Debian's libffmpeg-nvenc-dev)
Version: $(pkg-config --modversion ffnvcodec)
Cflags: -I\${includedir}
PC
echo "make_devlibs: $(du -sh "$OUTDIR" | cut -f1) in $OUTDIR; hwaccels: $(LD_LIBRARY_PATH=$OUTDIR/lib "$OUTDIR/bin/ffmpeg" -hide_banner -hwaccels | tail -n +2 | tr '\n' ' ')"

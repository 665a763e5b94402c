# Sourced by scripts/build.sh and scripts/fuzz.sh: compile through ccache
# (Debian's ccache, scripts/deps.sh) so that a build of files that did not
# change, in this tree or in another clone on the same machine, takes their
# objects from the cache. The paths under the tree are hashed relative to it
# (CCACHE_BASEDIR, CCACHE_NOHASHDIR), and the files that start from a
# precompiled header (cmake/pch.cmake) are cached too (CCACHE_SLOPPINESS as
# ccache's manual says for -include'd headers); each is kept where already
# set. Sets `ccache_launcher` to the CMake arguments that use it (none where
# ccache is not installed).
ccache_launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
  ccache_launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

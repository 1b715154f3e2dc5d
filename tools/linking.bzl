"""How codecvisor's shared objects are linked."""

# Linker flags for a shared object whose version script exports only its
# interface. gold, the toolchain's default linker, exports every weak
# definition that a library it links against also references, whatever the
# version script says: libstdc++'s std::string members, which C++20 code
# instantiates in each object (their extern templates are off for C++20),
# would be exported unversioned, able to interpose on libstdc++'s own for
# the whole process. lld keeps them local.
VERSION_SCRIPT_LINKOPTS = ["-fuse-ld=lld"]

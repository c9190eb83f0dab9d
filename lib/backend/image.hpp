// The sandbox base image: one Debian root filesystem built from distribution packages with
// debootstrap, with everything the agent needs (so a sandbox needs no network to provision),
// cached under $SS_CACHE/images/<id>/ and exported to each backend's format on demand.
//
//   images/<id>/rootfs.tar   the root filesystem for containers (numeric owners, xattrs; no
//                            kernel or modules), readable by everyone
//   images/<id>/vmlinuz      the kernel and initrd, for direct kernel boot (QEMU)
//   images/<id>/initrd.img
//   images/<id>/base.qcow2   the whole tree as an ext4 filesystem (no partition table), the
//                            backing file of every VM's overlay
//   images/<id>/image.json   id, release, mirror, npm_registry, created, versions of what is
//                            inside, size
//
// Building needs root (debootstrap, chroot, reading every file); using an image does not: the
// exports are made at build time, so a user in the lxd or docker group imports them.
//
// The id is "<release>-<hash>" where the hash covers the recipe (packages, the files baked into
// the image, the build steps), so a changed recipe is a new image and an unchanged one is reused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "json_out.hpp"

namespace ss {

class Config;

class Progress;

struct ImageBuildOptions {
  std::string release = "bookworm";
  std::string mirror = "http://deb.debian.org/debian";
  bool force = false;  // rebuild even when an image of this recipe exists
  // The user's own additions (image.packages, image.npm in config.yaml): part of the recipe.
  std::vector<std::string> packages;
  std::vector<std::string> npm;
};

struct ImageInfo {
  std::string id;
  std::string dir;
  std::string release;
  std::string mirror;        // the Debian archive it was built from
  std::string npm_registry;  // the npm registry it was built from
  std::string created;       // RFC 3339
  Json versions;             // {"node": "v22...", "claude_code": "2.1...", ...}
  int64_t size_bytes = 0;
};

std::string ImagesDir();
std::vector<ImageInfo> ListImages();
std::optional<ImageInfo> FindImage(const std::string& id);
// The id the recipe gives for these options.
std::string ImageIdFor(const ImageBuildOptions& options);

// Builds the image (or returns the cached one unless options.force). Needs root.
ImageInfo BuildImage(const ImageBuildOptions& options, Progress& progress);
// The build options config.yaml asks for (image.packages, image.npm; the default release).
ImageBuildOptions ImageOptionsFrom(const Config& config);

// What an image of these options has, for a backend that boots an image of its own (Lume):
// shell/ss-install-tools installs in it whatever of this is missing.
struct ImageTools {
  std::vector<std::string> packages;  // the system's (not the kernel's or the boot's)
  int node_major = 0;
  int npm_major = 0;
  std::vector<std::string> npm;  // installed globally
  std::string registry;          // the npm registry ss uses
};
ImageTools ImageToolsFor(const ImageBuildOptions& options);

// The image of the recipe config.yaml asks for, built first when missing.
ImageInfo EnsureImage(const Config& config, Progress& progress);
void RemoveImage(const ImageInfo& image);

// The VM export of an image: the disk and the kernel to boot directly. Throws ss::Error(66) when
// the image has none (built by an older ss).
struct VmImage {
  // The kernel's command line: the disk is the root filesystem itself. apparmor=0: Debian's
  // kernel enables AppArmor, and docker inside then wants a profile loader the image does not
  // have (and that costs seconds of boot under TCG).
  static constexpr const char* kKernelArgs = "root=/dev/vda rw console=ttyS0 apparmor=0";
  std::string disk;  // qcow2
  std::string kernel;
  std::string initrd;
};
VmImage VmImageFiles(const std::string& image_dir);

// The container export of an image, and the LXD metadata tarball (metadata.yaml and the
// hostname/hosts templates) written to `path`.
std::string ContainerTarball(const std::string& image_dir);
void WriteLxdMetadataTarball(const std::string& image_dir, const std::string& path);

}  // namespace ss

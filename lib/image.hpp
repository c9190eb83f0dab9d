// The sandbox base image: one Debian root filesystem built from distribution packages with
// debootstrap, with everything the agent needs (so a sandbox needs no network to provision),
// cached under $SS_CACHE/images/<id>/ and exported to each backend's format on demand.
//
//   images/<id>/rootfs/      the root filesystem (root-owned, numeric ids)
//   images/<id>/vmlinuz      its kernel and initrd, for direct kernel boot (QEMU)
//   images/<id>/initrd.img
//   images/<id>/image.json   id, release, mirror, created, versions of what is inside, size
//
// The id is "<release>-<hash>" where the hash covers the recipe (packages, the files baked into
// the image, the build steps), so a changed recipe is a new image and an unchanged one is reused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "json_out.hpp"

namespace ss {

class Progress;

struct ImageBuildOptions {
  std::string release = "bookworm";
  std::string mirror = "http://deb.debian.org/debian";
  bool force = false;  // rebuild even when an image of this recipe exists
};

struct ImageInfo {
  std::string id;
  std::string dir;
  std::string release;
  std::string mirror;
  std::string created;  // RFC 3339
  Json versions;        // {"node": "v22...", "claude_code": "2.1...", ...}
  int64_t size_bytes = 0;
};

std::string ImagesDir();
std::vector<ImageInfo> ListImages();
std::optional<ImageInfo> FindImage(const std::string& id);
// The id the recipe gives for these options.
std::string ImageIdFor(const ImageBuildOptions& options);

// Builds the image (or returns the cached one unless options.force). Needs root.
ImageInfo BuildImage(const ImageBuildOptions& options, Progress& progress);
// The image of the default recipe, built first when missing.
ImageInfo EnsureImage(Progress& progress);
void RemoveImage(const ImageInfo& image);

// Exports: a tarball of the root filesystem (numeric owners, xattrs kept), and the LXD metadata
// tarball (metadata.yaml + hostname/hosts templates).
void WriteRootfsTarball(const std::string& image_dir, const std::string& path);
void WriteLxdMetadataTarball(const std::string& image_dir, const std::string& path);

}  // namespace ss

# ss for macOS, built from source by Homebrew. From a checkout:
#
#   brew install --HEAD --formula ./packaging/homebrew/ss.rb
#
# HEAD is the main branch. A release names its archive's url and sha256 here, beside `head`.
# Every library CMakeLists.txt looks for is a dependency below (tests/cli/lint.bats checks it).
class Ss < Formula
  desc "Hand a project to an AI coding agent in a sandbox: full autonomy, safely"
  homepage "https://github.com/anthropics/super-sandbox"
  head "https://github.com/anthropics/super-sandbox.git", branch: "main"

  depends_on "asio" => :build
  depends_on "cmake" => :build
  depends_on "ninja" => :build
  depends_on "nlohmann-json" => :build
  depends_on "pkgconf" => :build
  depends_on "scdoc" => :build
  depends_on "boost"
  depends_on "libssh"
  depends_on macos: :ventura
  depends_on "openssl@3"
  depends_on "yaml-cpp"

  uses_from_macos "curl"
  uses_from_macos "rsync"

  def install
    system "cmake", "-S", ".", "-B", "build", "-G", "Ninja", "-DSS_TESTS=OFF", *std_cmake_args
    system "cmake", "--build", "build"
    system "cmake", "--install", "build"
  end

  def caveats
    <<~EOS
      ss runs its sandboxes with Lume or Lima (Apple Silicon), or Docker Desktop:
        brew install lima
      `ss doctor` says what this Mac has and lacks.
    EOS
  end

  test do
    assert_match "ss", shell_output("#{bin}/ss --version")
    assert_match "function ss", shell_output("#{bin}/ss init fish")
    system bin/"ss", "config", "path"
  end
end

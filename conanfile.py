# Conan 2 recipe for corolock, in the form of Conan Center recipes. The sources are this
# repository (exports_sources), so `conan create .` packages the checkout it runs in.
import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir
from conan.tools.scm import Version

required_conan_version = ">=2.1"


class CorolockConan(ConanFile):
    name = "corolock"
    description = "Redis-backed distributed locks for C++20 Boost.Asio coroutines"
    license = "BSL-1.0"
    topics = ("redis", "distributed-lock", "asio", "coroutines", "fencing-token")
    package_type = "library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "shared": [True, False],
        "fPIC": [True, False],
        "with_postgres": [True, False],
        "with_zookeeper": [True, False],
    }
    # The optional backends are off by default: the Redis library never needs libpq or the
    # ZooKeeper C client (doc/packaging.md).
    default_options = {"shared": False, "fPIC": True, "with_postgres": False,
                       "with_zookeeper": False}
    implements = ["auto_shared_fpic"]
    exports_sources = "CMakeLists.txt", "LICENSE", "cmake/*", "include/*", "src/*"

    # The optional backends: option -> (component, the target of the client library it links).
    _backends = {
        "with_postgres": ("postgres", "libpq::libpq"),
        "with_zookeeper": ("zookeeper", "zookeeper-client-c::zookeeper-client-c"),
    }

    @property
    def _min_cppstd(self):
        return 20

    @property
    def _compilers_minimum_version(self):
        # The compilers the library is built and tested with (C++20 coroutines, Asio 1.26).
        return {"gcc": "12", "clang": "14"}

    def set_version(self):
        # One source of the version: include/corolock/version.hpp.
        text = load(self, os.path.join(self.recipe_folder, "include", "corolock", "version.hpp"))
        parts = [re.search(rf"#define COROLOCK_VERSION_{p} (\d+)", text).group(1)
                 for p in ("MAJOR", "MINOR", "PATCH")]
        self.version = ".".join(parts)

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # Asio and Boost.System appear in the public headers; OpenSSL only in the sources.
        self.requires("boost/[>=1.81 <2]", transitive_headers=True)
        self.requires("openssl/[>=1.1 <4]")
        # The backends' public headers name no libpq or ZooKeeper type: no transitive headers.
        if self.options.with_postgres:
            self.requires("libpq/[>=13 <18]")
        if self.options.with_zookeeper:
            # The single-threaded C client (zookeeper_interest/zookeeper_process).
            self.requires("zookeeper-client-c/[>=3.5 <4]")

    def validate(self):
        check_min_cppstd(self, self._min_cppstd)
        minimum = self._compilers_minimum_version.get(str(self.settings.compiler))
        if minimum and Version(self.settings.compiler.version) < minimum:
            raise ConanInvalidConfiguration(
                f"{self.ref} needs C++{self._min_cppstd} coroutines: {self.settings.compiler} "
                f">= {minimum}")
        if self.settings.os == "Windows" and self.options.shared:
            # COROLOCK_DECL marks exports with ELF visibility only (no dllexport).
            raise ConanInvalidConfiguration(f"{self.ref} has no Windows DLL build")

    def generate(self):
        tc = CMakeToolchain(self)
        tc.cache_variables["COROLOCK_BUILD_TESTS"] = False
        tc.cache_variables["COROLOCK_BUILD_EXAMPLES"] = False
        tc.cache_variables["COROLOCK_BUILD_BENCH"] = False
        tc.cache_variables["COROLOCK_INSTALL"] = True
        tc.cache_variables["COROLOCK_WITH_POSTGRES"] = bool(self.options.with_postgres)
        tc.cache_variables["COROLOCK_WITH_ZOOKEEPER"] = bool(self.options.with_zookeeper)
        tc.generate()
        CMakeDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        cmake = CMake(self)
        cmake.install()
        # Conan writes the consumers' config and .pc files from package_info().
        rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))
        rmdir(self, os.path.join(self.package_folder, "lib", "pkgconfig"))
        rmdir(self, os.path.join(self.package_folder, "share"))

    def package_info(self):
        # The targets and .pc names of the project's own install (doc/packaging.md). The package
        # as a whole gets a target of its own: corolock::corolock is the Redis library alone.
        self.cpp_info.set_property("cmake_file_name", "corolock")
        self.cpp_info.set_property("cmake_target_name", "corolock::all")
        self.cpp_info.set_property("pkg_config_name", "corolock")

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "corolock::corolock")
        core.set_property("pkg_config_name", "corolock")
        core.libs = ["corolock"]
        core.requires = ["boost::headers", "openssl::ssl", "openssl::crypto"]
        if self.settings.os in ("Linux", "FreeBSD"):
            core.system_libs = ["pthread"]

        for option, (name, client) in self._backends.items():
            if self.options.get_safe(option):
                component = self.cpp_info.components[name]
                component.set_property("cmake_target_name", f"corolock::{name}")
                component.set_property("pkg_config_name", f"corolock-{name}")
                component.libs = [f"corolock_{name}"]
                component.requires = ["core", client]

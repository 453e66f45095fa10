// kh_python_app MODE ROOT [NATIVE_DIR]: one scenario of the Python runtime in a fresh process
// (what a process maps, which signal handlers it keeps, what its interpreter sees), printing
// `key=value` lines the tests read. Exit 0 when the scenario ran, whatever it found.
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <ATen/ATen.h>

#include "kernelhub/loader/kernel_loader.hpp"
#include "kernelhub/python_kernel.hpp"

namespace kpy = kernelhub::python;
namespace kl = kernelhub::loader;

namespace {

volatile std::sig_atomic_t g_interrupts = 0;
volatile std::sig_atomic_t g_terminations = 0;

bool mapped(const std::string& needle) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(needle) != std::string::npos) return true;
  }
  return false;
}

void say(const std::string& key, const std::string& value) {
  std::cout << key << "=" << value << std::endl;
}

void report_maps(const std::string& when) {
  say("pyshim_" + when, mapped("libkernelhub_pyshim.so") ? "1" : "0");
  say("libpython_" + when, mapped("libpython3") ? "1" : "0");
  say("libtorch_python_" + when, mapped("libtorch_python.so") ? "1" : "0");
}

// A native kernel first (it needs the C-API shim), then a Python one whose exception
// crosses libpython's error functions: they must be libpython's, not the shim's stubs.
int native_then_python(const std::string& root, const std::string& native_dir) {
  report_maps("start");
  auto source = kl::open_local_kernel(native_dir, "native", kl::current_runtime());
  if (!source || !kl::load_kernel(std::move(*source))) {
    say("native", "failed");
    return 1;
  }
  report_maps("after_native");
  const auto kernel = kpy::get_local_kernel(root);
  report_maps("after_python");
  try {
    kernel.call("fail", {std::string("through libpython")});
  } catch (const kpy::PythonError& error) {
    say("error_type", error.type());
    say("error_message", error.python_message());
  }
  say("after_error", kernel.call("mark").toStringRef());
  return 0;
}

int signals(const std::string& root) {
  struct sigaction action {};
  action.sa_handler = [](int signal) {
    if (signal == SIGINT) g_interrupts = g_interrupts + 1;
    if (signal == SIGTERM) g_terminations = g_terminations + 1;
  };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const auto kernel = kpy::get_local_kernel(root);
  say("mark", kernel.call("mark").toStringRef());
  std::raise(SIGINT);
  std::raise(SIGTERM);
  say("interrupts", std::to_string(g_interrupts));
  say("terminations", std::to_string(g_terminations));
  struct sigaction now {};
  sigaction(SIGINT, nullptr, &now);
  say("sigint_is_ours", now.sa_handler == action.sa_handler ? "1" : "0");
  // Python's own signal machinery must not have taken SIGINT either.
  say("mark_after", kernel.call("mark").toStringRef());
  return 0;
}

// Tries to load the kernel at ROOT and says what happened.
int try_load(const std::string& root) {
  try {
    kpy::get_local_kernel(root);
    say("outcome", "loaded");
  } catch (const kpy::BackendUnavailable& error) {
    say("outcome", "unavailable");
    say("message", error.what());
  }
  report_maps("end");
  return 0;
}

// What the embedded interpreter sees: the kernel's flags() and whether a module planted
// where PYTHONPATH and the current directory point can be found.
int isolation(const std::string& root, const std::string& cwd) {
  if (::chdir(cwd.c_str()) != 0) return 1;
  const auto kernel = kpy::get_local_kernel(root);
  const auto flags = kernel.call("flags").toTupleRef().elements();
  say("isolated", std::to_string(flags[0].toInt()));
  say("no_user_site", std::to_string(flags[1].toInt()));
  say("dont_write_bytecode", flags[2].toBool() ? "1" : "0");
  say("cwd_on_path", flags[3].toListRef().empty() ? "0" : "1");
  say("ignore_environment", std::to_string(flags[4].toInt()));
  say("planted_found", kernel.call("can_import", {std::string("kh_planted")}).toBool() ? "1" : "0");
  say("named_found", kernel.call("can_import", {std::string("kh_named")}).toBool() ? "1" : "0");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: kh_python_app native-then-python ROOT NATIVE | signals ROOT | off ROOT | "
                 "isolation ROOT CWD\n";
    return 2;
  }
  const std::string mode = argv[1];
  const std::string root = argv[2];
  try {
    if (mode == "native-then-python" && argc == 4) return native_then_python(root, argv[3]);
    if (mode == "signals") return signals(root);
    if (mode == "try-load") return try_load(root);
    if (mode == "isolation" && argc == 4) return isolation(root, argv[3]);
  } catch (const std::exception& error) {
    std::cerr << "kh_python_app: " << error.what() << "\n";
    return 1;
  }
  std::cerr << "kh_python_app: unknown mode " << mode << "\n";
  return 2;
}

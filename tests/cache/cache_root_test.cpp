#include <catch2/catch.hpp>

#include "kernelhub/cache/kernel_cache.hpp"

using namespace kernelhub;
using kernelhub::cache::resolve_cache_root;

TEST_CASE("cache root precedence follows kernels and huggingface_hub", "[cache][root]") {
  struct Row {
    std::map<std::string, std::string, std::less<>> vars;
    std::string want;
  };
  const std::vector<Row> rows{
      {{{"HOME", "/home/u"}}, "/home/u/.cache/huggingface/hub"},
      {{{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg"}}, "/xdg/huggingface/hub"},
      {{{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "/xdg"}, {"HF_HOME", "/hf"}}, "/hf/hub"},
      {{{"HF_HOME", "/hf"}, {"HUGGINGFACE_HUB_CACHE", "/legacy"}}, "/legacy"},
      {{{"HF_HOME", "/hf"}, {"HUGGINGFACE_HUB_CACHE", "/legacy"}, {"HF_HUB_CACHE", "/hubcache"}},
       "/hubcache"},
      {{{"HF_HUB_CACHE", "/hubcache"}, {"KERNELS_CACHE", "/kc"}}, "/kc"},
      {{{"HOME", "/home/u"}, {"KERNELS_CACHE", "~/kernels"}}, "/home/u/kernels"},
      {{{"HOME", "/home/u"}, {"HF_HOME", "~"}}, "/home/u/hub"},
      {{{"HOME", "/home/u"}, {"HF_HUB_CACHE", "~other/x"}},
       "~other/x"},  // only the caller's ~ expands
      {{{"HOME", "/home/u"}, {"KERNELS_CACHE", ""}, {"HF_HUB_CACHE", "/hubcache"}},
       "/hubcache"},  // empty = unset
      {{{"HOME", "/home/u"}, {"SCRATCH", "/s"}, {"HF_HUB_CACHE", "$SCRATCH/hub"}}, "/s/hub"},
      {{{"HOME", "/home/u"}, {"SCRATCH", "/s"}, {"KERNELS_CACHE", "${SCRATCH}/k"}}, "/s/k"},
      {{{"HOME", "/home/u"}, {"HF_HOME", "$HOME/hf"}}, "/home/u/hf/hub"},
      {{{"HOME", "/home/u"}, {"XDG_CACHE_HOME", "~/xdg"}}, "/home/u/xdg/huggingface/hub"},
  };
  for (const auto& row : rows) {
    INFO("want " << row.want);
    CHECK(resolve_cache_root(util::Environment(row.vars)) == std::filesystem::path(row.want));
  }
}

#include "server/store_fixture.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

namespace kernelhub::testing {

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

void make_source_tree(const std::filesystem::path& dir) {
  const auto v = dir / "build/torch-cpu";
  write_file(v / "demo/__init__.py", "from ._ops import ops\n");
  std::string so =
      "\x7f"
      "ELF";
  for (int i = 0; i < 500; ++i) so.push_back(static_cast<char>(i * 7));
  write_file(v / "demo/_ops.so", so);
  write_file(v / "demo/sub/deep.txt", "deep\n");
  std::string big(2 * 1024 * 1024, '\0');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>((i * 131 + i / 977) & 0xff);
  write_file(v / "weights.dat", big);
  write_file(dir / "README.md", "# demo kernel\n");
  write_file(v / "demo/__pycache__/x.cpython-311.pyc", "junk");
}

StoreFixture::StoreFixture() : store(tmp.path() / "store"), source(tmp.path() / "src") {
  make_source_tree(source);
  auto main = hub::server::publish_directory(request("main"));
  REQUIRE(main);
  auto req = request("v1");
  req.tag = "v1.0.0";
  req.timestamp = 1700000000;  // same content and time as main: the very same commit
  auto v1 = hub::server::publish_directory(req);
  REQUIRE(v1);
  REQUIRE(v1->commit == main->commit);
  commit = main->commit;
}

hub::server::PublishRequest StoreFixture::request(const std::string& branch) const {
  hub::server::PublishRequest r;
  r.root = store;
  r.repo = kTestRepo;
  r.branch = branch;
  r.source = source;
  r.message = "test build";
  r.timestamp = 1700000000;
  return r;
}

ServerFixture::ServerFixture(std::size_t page_size, bool test_endpoints) {
  hub::server::ServerOptions options;
  options.root = store;
  options.tree_page_size = page_size;
  server = std::make_unique<testing::FaultHub>(options, test_endpoints);
  auto started = server->start();
  REQUIRE(started);
  REQUIRE(server->port() > 0);
}

httplib::Client ServerFixture::client() const {
  httplib::Client c("127.0.0.1", server->port());
  c.set_read_timeout(20, 0);
  return c;
}

std::string ServerFixture::host() const { return "127.0.0.1:" + std::to_string(server->port()); }

}  // namespace kernelhub::testing

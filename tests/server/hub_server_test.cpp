#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "kernelhub/hub/server/local_store.hpp"
#include "kernelhub/trust/digest.hpp"
#include "server/store_fixture.hpp"

using namespace kernelhub;
using kernelhub::testing::ServerFixture;
using json = nlohmann::json;

namespace {
const std::string kApi = "/api/kernels/kernels-community/demo-kernel";
const std::string kResolve = "/kernels/kernels-community/demo-kernel/resolve/";

json get_json(httplib::Client& c, const std::string& path, int expect = 200) {
  auto res = c.Get(path.c_str());
  REQUIRE(res);
  INFO(path << " -> " << res->body);
  REQUIRE(res->status == expect);
  return json::parse(res->body);
}

// Path part of an absolute URL on our server.
std::string path_of(const std::string& url, const std::string& host) {
  const std::string prefix = "http://" + host;
  REQUIRE(url.rfind(prefix, 0) == 0);
  return url.substr(prefix.size());
}
}  // namespace

TEST_CASE("refs lists branches, tags and an empty converts", "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  const json refs = get_json(c, kApi + "/refs");
  CHECK(refs["converts"] == json::array());
  REQUIRE(refs["branches"].size() == 2);
  CHECK(refs["branches"][1] ==
        json{{"name", "v1"}, {"ref", "refs/heads/v1"}, {"targetCommit", fx.commit}});
  CHECK_FALSE(refs.contains("pullRequests"));
  CHECK(get_json(c, kApi + "/refs?include_prs=1")["pullRequests"] == json::array());
  CHECK(refs["tags"] ==
        json::array(
            {{{"name", "v1.0.0"}, {"ref", "refs/tags/v1.0.0"}, {"targetCommit", fx.commit}}}));
}

TEST_CASE("revision info by branch, tag, sha and default main, siblings only for models",
          "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  for (const std::string& rev :
       std::vector<std::string>{"v1", "v1.0.0", fx.commit, "refs%2Fheads%2Fv1"}) {
    const json info = get_json(c, kApi + "/revision/" + rev);
    CHECK(info["sha"] == fx.commit);
    CHECK(info["id"] == "kernels-community/demo-kernel");
    CHECK(info["private"] == false);
    CHECK_FALSE(info.contains("siblings"));
  }
  CHECK(get_json(c, kApi)["sha"] == fx.commit);
  const json model = get_json(c, "/api/models/kernels-community/demo-kernel/revision/main");
  REQUIRE(model["siblings"].size() == 5);
  CHECK(model["siblings"][0] == json{{"rfilename", "README.md"}});
}

TEST_CASE("tree pagination follows absolute Link headers to the full listing", "[server]") {
  ServerFixture fx(2);
  auto c = fx.client();
  std::string next = kApi + "/tree/v1?recursive=True&expand=False";
  std::vector<std::string> paths;
  int pages = 0;
  while (!next.empty()) {
    auto res = c.Get(next.c_str());
    REQUIRE(res);
    REQUIRE(res->status == 200);
    const json page = json::parse(res->body);
    CHECK(page.size() <= 2);
    for (const auto& e : page) paths.push_back(e["path"]);
    ++pages;
    const std::string link = res->get_header_value("Link");
    if (link.empty()) break;
    REQUIRE(link.find(">; rel=\"next\"") != std::string::npos);
    next = path_of(link.substr(1, link.find('>') - 1), fx.host());
  }
  CHECK(pages == 5);  // 9 entries: 4 directories + 5 files
  CHECK(paths ==
        std::vector<std::string>{"README.md", "build", "build/torch-cpu", "build/torch-cpu/demo",
                                 "build/torch-cpu/demo/__init__.py", "build/torch-cpu/demo/_ops.so",
                                 "build/torch-cpu/demo/sub", "build/torch-cpu/demo/sub/deep.txt",
                                 "build/torch-cpu/weights.dat"});
}

TEST_CASE("tree entries carry oid, size and lfs, paths may be %2F-encoded", "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  const json entries = get_json(c, kApi + "/tree/main/build%2Ftorch-cpu%2Fdemo");
  REQUIRE(entries.size() == 3);
  const std::string py = testing::slurp(fx.source / "build/torch-cpu/demo/__init__.py");
  CHECK(entries[0] == json{{"type", "file"},
                           {"path", "build/torch-cpu/demo/__init__.py"},
                           {"oid", trust::git_blob_sha1_hex(py)},
                           {"size", py.size()}});
  const std::string so = testing::slurp(fx.source / "build/torch-cpu/demo/_ops.so");
  CHECK(entries[1]["lfs"]["oid"] == trust::sha256_hex(so));
  CHECK(entries[1]["lfs"]["size"] == so.size());
  CHECK(entries[1]["size"] == so.size());
  CHECK(entries[1]["lfs"]["pointerSize"].get<int>() > 100);
  CHECK(entries[2]["type"] == "directory");
  CHECK(get_json(c, kApi + "/tree/main/build/torch-cpu/demo") == entries);  // raw slashes too
  auto missing = c.Get((kApi + "/tree/main/nope").c_str());
  REQUIRE(missing);
  CHECK(missing->status == 404);
  CHECK(missing->get_header_value("X-Error-Code") == "EntryNotFound");
}

TEST_CASE("paths-info accepts JSON and form bodies and omits unknown paths", "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  const std::string url = kApi + "/paths-info/v1";
  auto as_json = c.Post(url.c_str(), json{{"paths", {"README.md", "nope", "build"}}}.dump(),
                        "application/json");
  REQUIRE(as_json);
  REQUIRE(as_json->status == 200);
  const json a = json::parse(as_json->body);
  REQUIRE(a.size() == 2);
  CHECK(a[0]["path"] == "README.md");
  CHECK(a[1]["type"] == "directory");
  httplib::Params form{
      {"paths", "README.md"}, {"paths", "build/torch-cpu/weights.dat"}, {"expand", "false"}};
  auto as_form = c.Post(url.c_str(), form);
  REQUIRE(as_form);
  const json b = json::parse(as_form->body);
  REQUIRE(b.size() == 2);
  CHECK(b[1]["lfs"]["size"] == 2 * 1024 * 1024);
}

TEST_CASE("HEAD on a regular file: 200, git-sha1 ETag, X-Repo-Commit, Content-Length", "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  const auto file = fx.source / "build/torch-cpu/demo/__init__.py";
  auto res = c.Head((kResolve + "v1/build/torch-cpu/demo/__init__.py").c_str());
  REQUIRE(res);
  CHECK(res->status == 200);
  // Independent reference: git itself.
  auto git = testing::run_command({"/usr/bin/git", "hash-object", file.string()});
  REQUIRE(git.exit_code == 0);
  CHECK(res->get_header_value("ETag") == "\"" + git.out.substr(0, 40) + "\"");
  CHECK(res->get_header_value("X-Repo-Commit") == fx.commit);
  CHECK(res->get_header_value("Content-Length") ==
        std::to_string(std::filesystem::file_size(file)));
  CHECK(res->get_header_value("Accept-Ranges") == "bytes");
  CHECK_FALSE(res->has_header("Content-Encoding"));
  auto body = c.Get((kResolve + fx.commit + "/build/torch-cpu/demo/__init__.py").c_str());
  REQUIRE(body);
  CHECK(body->body == testing::slurp(file));
}

TEST_CASE("HEAD on an LFS file: 302 to our LFS URL with X-Linked-Etag and X-Linked-Size",
          "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  const std::string bytes = testing::slurp(fx.source / "build/torch-cpu/weights.dat");
  auto res = c.Head((kResolve + "v1.0.0/build/torch-cpu/weights.dat").c_str());
  REQUIRE(res);
  CHECK(res->status == 302);
  CHECK(res->get_header_value("X-Linked-Etag") == "\"" + trust::sha256_hex(bytes) + "\"");
  CHECK(res->get_header_value("X-Linked-Size") == std::to_string(bytes.size()));
  CHECK(res->get_header_value("X-Repo-Commit") == fx.commit);
  CHECK_FALSE(res->get_header_value("ETag").empty());
  const std::string location = res->get_header_value("Location");
  auto lfs = c.Get(path_of(location, fx.host()).c_str());
  REQUIRE(lfs);
  CHECK(lfs->status == 200);
  CHECK(lfs->get_header_value("ETag") == "\"" + trust::sha256_hex(bytes) + "\"");
  CHECK(trust::sha256_hex(lfs->body) == trust::sha256_hex(bytes));
  // huggingface_hub >= 2 follows same-host redirects and reads the metadata from the target.
  CHECK(lfs->get_header_value("X-Repo-Commit") == fx.commit);
  CHECK(lfs->get_header_value("Content-Length") == std::to_string(bytes.size()));
  auto forged =
      c.Get((path_of(location, fx.host()) + "x").c_str());  // path no longer names this object
  REQUIRE(forged);
  CHECK(forged->status == 404);
  // The model-type path serves the same repo.
  auto model = c.Head("/kernels-community/demo-kernel/resolve/main/build/torch-cpu/weights.dat");
  REQUIRE(model);
  CHECK(model->status == 302);
}

TEST_CASE("Range requests get 206 with the right slice, and 416 past the end", "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  const std::string bytes = testing::slurp(fx.source / "build/torch-cpu/weights.dat");
  auto head = c.Head((kResolve + "main/build/torch-cpu/weights.dat").c_str());
  REQUIRE(head);
  const std::string lfs_path = path_of(head->get_header_value("Location"), fx.host());
  auto part = c.Get(lfs_path.c_str(), {{"Range", "bytes=1000-1999"}});
  REQUIRE(part);
  CHECK(part->status == 206);
  CHECK(part->get_header_value("Content-Range") ==
        "bytes 1000-1999/" + std::to_string(bytes.size()));
  CHECK(part->body == bytes.substr(1000, 1000));
  auto tail = c.Get(lfs_path.c_str(), {{"Range", "bytes=2000000-"}});
  REQUIRE(tail);
  CHECK(tail->status == 206);
  CHECK(tail->body == bytes.substr(2000000));
  auto suffix = c.Get((kResolve + "main/README.md").c_str(), {{"Range", "bytes=-3"}});
  REQUIRE(suffix);
  CHECK(suffix->status == 206);
  CHECK(suffix->body == "el\n");
  auto beyond = c.Get(lfs_path.c_str(), {{"Range", "bytes=" + std::to_string(bytes.size()) + "-"}});
  REQUIRE(beyond);
  CHECK(beyond->status == 416);
  CHECK(beyond->get_header_value("Content-Range") == "bytes */" + std::to_string(bytes.size()));
}

TEST_CASE("a malformed Range gets the whole file with 200, as RFC 9110 says", "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  const std::string readme = testing::slurp(fx.source / "README.md");
  // httplib 0.11 answered these 416 before routing; the guarded listener drops them.
  for (const char* bad : {"bytes=abc", "bytes=9-2", "bytes=-", "lines=0-1"}) {
    INFO(bad);
    auto res = c.Get((kResolve + "main/README.md").c_str(), {{"Range", bad}});
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(res->body == readme);
  }
}

TEST_CASE("errors carry X-Error-Code, X-Error-Message and a JSON error", "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  const auto expect = [&](const std::string& path, const std::string& code) {
    auto res = c.Get(path.c_str());
    REQUIRE(res);
    INFO(path);
    CHECK(res->status == 404);
    CHECK(res->get_header_value("X-Error-Code") == code);
    CHECK_FALSE(res->get_header_value("X-Error-Message").empty());
    CHECK(json::parse(res->body).contains("error"));
    return res;
  };
  expect("/api/kernels/kernels-community/nope/refs", "RepoNotFound");
  expect("/api/kernels/kernels-community/demo-kernel/revision/v9", "RevisionNotFound");
  expect(kResolve + "v9/README.md", "RevisionNotFound");
  expect("/kernels/kernels-community/nope/resolve/main/README.md", "RepoNotFound");
  auto missing = expect(kResolve + "v1/kernel-status.toml", "EntryNotFound");
  CHECK(missing->get_header_value("X-Repo-Commit") == fx.commit);
}

TEST_CASE("every request is recorded with its status", "[server]") {
  ServerFixture fx;
  auto c = fx.client();
  REQUIRE(c.Get((kApi + "/refs").c_str()));
  REQUIRE(c.Head((kResolve + "v1/README.md").c_str()));
  REQUIRE(c.Get((kResolve + "v1/missing").c_str()));
  CHECK(fx.server->count("GET", "/refs") == 1);
  CHECK(fx.server->count("HEAD", "/resolve/") == 1);
  const auto records = fx.server->requests();
  REQUIRE(records.size() == 3);
  CHECK(records[2].status == 404);
  CHECK(records[2].path == kResolve + "v1/missing");
  fx.server->reset_requests();
  CHECK(fx.server->requests().empty());
}

TEST_CASE("test endpoints exist only when enabled", "[server]") {
  {
    ServerFixture off;
    auto c = off.client();
    auto res = c.Get("/_kernelhub/requests");
    REQUIRE(res);
    CHECK(res->status == 404);
  }
  ServerFixture on(1000, true);
  auto c = on.client();
  REQUIRE(c.Get((kApi + "/refs").c_str()));
  const json records = get_json(c, "/_kernelhub/requests");
  REQUIRE(records.size() == 1);
  CHECK(
      records[0] ==
      json{{"method", "GET"}, {"path", kApi + "/refs"}, {"status", 200}, {"authorization", false}});
  REQUIRE(c.Get((kApi + "/refs").c_str(), {{"Authorization", "Bearer hf_x"}}));
  CHECK(get_json(c, "/_kernelhub/requests").at(1).at("authorization") == true);
  auto set =
      c.Post("/_kernelhub/faults", R"({"fail_status":503,"fail_count":1})", "application/json");
  REQUIRE(set);
  CHECK(set->status == 200);
  auto failed = c.Get((kApi + "/refs").c_str());
  REQUIRE(failed);
  CHECK(failed->status == 503);
  REQUIRE(c.Post("/_kernelhub/requests/reset", "", "application/json"));
  CHECK(get_json(c, "/_kernelhub/requests").empty());
}

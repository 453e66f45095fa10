#include <catch2/catch.hpp>

#include <grp.h>
#include <pwd.h>

#include <vector>

#include "kernelhub/trust/policy.hpp"

using namespace kernelhub;
using namespace kernelhub::trust;

TEST_CASE("without a [daemon] table everyone may connect", "[trust][peer]") {
  auto policy = parse_policy("[trust]\nopt_in = [\"x\"]\n");
  REQUIRE(policy);
  CHECK_FALSE(policy->allow_users);
  CHECK_FALSE(policy->allow_groups);
  CHECK(peer_allowed(*policy, 4242, 4242, {}));
}

TEST_CASE("allow_users and allow_groups take names and numeric ids", "[trust][peer]") {
  // root and its group exist on every Linux system.
  auto policy =
      parse_policy("[daemon]\nallow_users = [\"root\", 1000]\nallow_groups = [\"root\", 2000]\n");
  REQUIRE(policy);
  CHECK(*policy->allow_users == std::set<uid_t>{0, 1000});
  CHECK(*policy->allow_groups == std::set<gid_t>{0, 2000});
}

TEST_CASE("peer_allowed admits listed users and members of listed groups only", "[trust][peer]") {
  AdminPolicy policy;
  policy.allow_users = std::set<uid_t>{1000};
  policy.allow_groups = std::set<gid_t>{2000};
  const std::vector<gid_t> none;
  const std::vector<gid_t> member{10, 2000};
  const std::vector<gid_t> other{10, 20};
  CHECK(peer_allowed(policy, 1000, 1000, none));
  CHECK(peer_allowed(policy, 1001, 2000, none));    // primary group
  CHECK(peer_allowed(policy, 1001, 1001, member));  // supplementary group
  CHECK_FALSE(peer_allowed(policy, 1001, 1001, other));
  CHECK(peer_allowed(policy, 0, 0, none));  // root always may

  AdminPolicy users_only;
  users_only.allow_users = std::set<uid_t>{1000};
  CHECK_FALSE(peer_allowed(users_only, 1001, 2000, member));
  AdminPolicy groups_only;
  groups_only.allow_groups = std::set<gid_t>{2000};
  CHECK_FALSE(peer_allowed(groups_only, 1000, 1000, none));
  CHECK(peer_allowed(groups_only, 1000, 1000, member));
}

TEST_CASE("bad [daemon] tables fail with ErrorCode::policy and say why", "[trust][peer]") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[daemon]\nallow_users = [\"no-such-user-kh\"]\n", "no user named 'no-such-user-kh'"},
      {"[daemon]\nallow_groups = [\"no-such-group-kh\"]\n", "no group named 'no-such-group-kh'"},
      {"[daemon]\nallow_users = \"root\"\n", "allow_users must be an array"},
      {"[daemon]\nallow_users = [-1]\n", "id out of range"},
      {"[daemon]\nallow_groups = [true]\n", "only names or numeric ids"},
      {"[daemon]\nallow = [1]\n", "unknown key 'allow' in [daemon]"},
      {"daemon = 1\n", "'daemon' must be a table"},
  };
  for (const auto& [text, needle] : cases) {
    INFO(text);
    auto policy = parse_policy(text);
    REQUIRE_FALSE(policy);
    CHECK(policy.error().code == ErrorCode::policy);
    CHECK(policy.error().message.find(needle) != std::string::npos);
  }
}

TEST_CASE("[daemon] limit keys are read, range-checked, and absent ones stay unset",
          "[trust][peer][limits]") {
  auto none = parse_policy("[daemon]\nallow_users = [0]\n");
  REQUIRE(none);
  CHECK_FALSE(none->limits.max_connections);
  CHECK_FALSE(none->limits.max_connections_per_uid);
  CHECK_FALSE(none->limits.idle_timeout_s);
  CHECK_FALSE(none->limits.frame_timeout_s);
  CHECK_FALSE(none->limits.max_downloads);

  auto all = parse_policy(
      "[daemon]\nmax_connections = 512\nmax_connections_per_uid = 16\nidle_timeout_s = 30\n"
      "frame_timeout_s = 5\nmax_downloads = 2\n");
  REQUIRE(all);
  CHECK(all->limits.max_connections == 512u);
  CHECK(all->limits.max_connections_per_uid == 16u);
  CHECK(all->limits.idle_timeout_s == 30u);
  CHECK(all->limits.frame_timeout_s == 5u);
  CHECK(all->limits.max_downloads == 2u);

  for (const std::string text :
       {"[daemon]\nmax_connections = 0\n", "[daemon]\nmax_connections_per_uid = -3\n",
        "[daemon]\nidle_timeout_s = 86401\n", "[daemon]\nframe_timeout_s = \"10\"\n",
        "[daemon]\nmax_downloads = 1.5\n", "[daemon]\nmax_downloads = 1025\n"}) {
    INFO(text);
    auto bad = parse_policy(text);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == ErrorCode::policy);
    CHECK(bad.error().message.find("must be an integer from 1 to") != std::string::npos);
  }
}

TEST_CASE("only root and the import_users / import_groups of the policy may import bundles",
          "[trust][peer]") {
  auto none = parse_policy("[daemon]\n");
  REQUIRE(none);
  CHECK(peer_may_import(*none, 0, 0, {}));
  CHECK_FALSE(peer_may_import(*none, 1000, 1000, {}));
  auto listed = parse_policy("[daemon]\nimport_users = [1000]\nimport_groups = [\"root\", 3000]\n");
  REQUIRE(listed);
  CHECK(peer_may_import(*listed, 1000, 1000, {}));
  CHECK(peer_may_import(*listed, 1001, 3000, {}));
  const std::vector<gid_t> groups{5, 3000};
  CHECK(peer_may_import(*listed, 1002, 1002, groups));
  CHECK_FALSE(peer_may_import(*listed, 1003, 1003, {}));
  // Importing is not connecting: allow_users stays as it was.
  CHECK_FALSE(listed->allow_users);
  CHECK_FALSE(parse_policy("[daemon]\nimport_users = [\"no-such-user-kh\"]\n"));
  CHECK(parse_policy("[trust]\nallow_version_rollback = true\n")->allow_version_rollback);
}

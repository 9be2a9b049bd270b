// The client configuration file (src/cli/config.h): where it is, what it
// holds, its errors, and the permission warnings for files with secrets.

#include "cli/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>

namespace artel::cli {
namespace {

namespace fs = std::filesystem;

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::random_device rd;
    dir_ =
        (fs::temp_directory_path() / ("artel-cfg-" + std::to_string(getpid()) + "-" + std::to_string(rd())))
            .string();
    fs::create_directories(dir_);
    for (const char* v : {"ARTEL_CONFIG", "XDG_CONFIG_HOME", "HOME"}) {
      const char* old = std::getenv(v);
      saved_.emplace_back(v, old ? std::optional<std::string>(old) : std::nullopt);
    }
  }
  void TearDown() override {
    for (const auto& [k, v] : saved_) {
      if (v) {
        setenv(k.c_str(), v->c_str(), 1);
      } else {
        unsetenv(k.c_str());
      }
    }
    fs::remove_all(dir_);
  }
  void Write(const std::string& path, const std::string& text, mode_t mode = 0600) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
    chmod(path.c_str(), mode);
  }
  std::string dir_;
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST_F(ConfigTest, PathFollowsArtelConfigThenXdgThenHome) {
  unsetenv("ARTEL_CONFIG");
  unsetenv("XDG_CONFIG_HOME");
  setenv("HOME", dir_.c_str(), 1);
  EXPECT_EQ(ConfigPath(), dir_ + "/.config/artel/config");
  // The flat file of earlier versions is read while there is no new one.
  Write(dir_ + "/.config/artel/config.yaml", "server: http://x\n");
  EXPECT_EQ(ConfigPath(), dir_ + "/.config/artel/config.yaml");
  setenv("XDG_CONFIG_HOME", (dir_ + "/xdg").c_str(), 1);
  EXPECT_EQ(ConfigPath(), dir_ + "/xdg/artel/config");
  setenv("ARTEL_CONFIG", (dir_ + "/mine").c_str(), 1);
  EXPECT_EQ(ConfigPath(), dir_ + "/mine");
}

TEST_F(ConfigTest, RoundTripAndFlatForm) {
  ConfigFile cfg;
  std::string err;
  ASSERT_TRUE(LoadConfig(dir_ + "/none", &cfg, &err)) << err;
  EXPECT_FALSE(cfg.exists);
  cfg.current = "dev";
  cfg.contexts.push_back({"dev", "http://127.0.0.1:1", "", dir_ + "/tok", "", "team-a", false});
  cfg.contexts.push_back({"prod", "https://gpu:7433", "secret-1", "", "/ca.pem", "", true});
  ASSERT_TRUE(SaveConfig(cfg, &err)) << err;
  struct stat st {};
  ASSERT_EQ(stat(cfg.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(ConfigYaml(cfg, false).find("secret-1"), std::string::npos);
  ConfigFile back;
  ASSERT_TRUE(LoadConfig(cfg.path, &back, &err)) << err;
  EXPECT_EQ(back.current, "dev");
  ASSERT_EQ(back.contexts.size(), 2u);
  EXPECT_EQ(back.Find("prod")->token, "secret-1");
  EXPECT_TRUE(back.Find("prod")->insecure);
  EXPECT_EQ(back.Find("dev")->ns, "team-a");

  Write(dir_ + "/flat.yaml", "server: http://h:1\ntoken: t\nnamespace: team-b\ncaFile: /c\n");
  ASSERT_TRUE(LoadConfig(dir_ + "/flat.yaml", &back, &err)) << err;
  EXPECT_EQ(back.current, "default");
  EXPECT_EQ(back.Find("default")->ns, "team-b");
}

TEST_F(ConfigTest, ErrorsNameFileLineAndField) {
  ConfigFile cfg;
  std::string err;
  Write(dir_ + "/c1", "currentContext: dev\ncontexts:\n  - name: dev\n    sever: http://x\n");
  EXPECT_FALSE(LoadConfig(dir_ + "/c1", &cfg, &err));
  EXPECT_NE(err.find(dir_ + "/c1:4: contexts[0].sever: unknown field"), std::string::npos) << err;
  Write(dir_ + "/c2", "currentContext: nope\ncontexts:\n  - name: dev\n");
  EXPECT_FALSE(LoadConfig(dir_ + "/c2", &cfg, &err));
  EXPECT_NE(err.find(":1: currentContext: no context named nope"), std::string::npos) << err;
  Write(dir_ + "/c3", "contexts:\n  - server: http://x\n");
  EXPECT_FALSE(LoadConfig(dir_ + "/c3", &cfg, &err));
  EXPECT_NE(err.find("contexts[0].name"), std::string::npos) << err;
  Write(dir_ + "/c4", "contexts: [\n");
  EXPECT_FALSE(LoadConfig(dir_ + "/c4", &cfg, &err));
  EXPECT_NE(err.find(dir_ + "/c4"), std::string::npos) << err;
}

TEST_F(ConfigTest, TokenFileReadableByOthersIsWarnedAbout) {
  std::string token, warning, err;
  Write(dir_ + "/private", "tok-1\n", 0600);
  ASSERT_TRUE(ReadTokenFile(dir_ + "/private", &token, &warning, &err)) << err;
  EXPECT_EQ(token, "tok-1");
  EXPECT_EQ(warning, "");
  Write(dir_ + "/open", "  tok-2  \n", 0644);
  ASSERT_TRUE(ReadTokenFile(dir_ + "/open", &token, &warning, &err)) << err;
  EXPECT_EQ(token, "tok-2");
  EXPECT_NE(warning.find("readable by others (mode 0644)"), std::string::npos) << warning;
  EXPECT_NE(warning.find("chmod 600"), std::string::npos) << warning;
  Write(dir_ + "/empty", "\n");
  EXPECT_FALSE(ReadTokenFile(dir_ + "/empty", &token, &warning, &err));
  EXPECT_FALSE(ReadTokenFile(dir_ + "/missing", &token, &warning, &err));
}

}  // namespace
}  // namespace artel::cli
